// Command release writes the parts of a release that hack/release.sh (make
// release) does not build with the Go toolchain or helm:
//
//	go run ./hack/release archive -os linux -arch amd64 -binary B -dist dist
//	    dist/kubectl-flightfeed_linux_amd64.tar.gz and its .sha256: the
//	    plugin's binary B, its completion script for kubectl (not on
//	    windows) and the LICENSE (pluginFiles; make plugin-dist).
//	go run ./hack/release krew -version 0.9.0 -dist dist -platforms "linux/amd64 ..."
//	    dist/flightfeed.yaml: the krew manifest hack/krew/flightfeed.yaml
//	    rendered as krew-release-bot renders it (Go templates, TagName,
//	    addURIAndSha), each archive's sha256 computed from the file in dist/;
//	    platforms not in -platforms are left out.
//	go run ./hack/release sbom -version 0.9.0 -commit C -out F BINARY|ARCHIVE...
//	    a CycloneDX 1.5 JSON SBOM of the Go modules linked into the binaries,
//	    read from the build information the Go toolchain records in each
//	    (what `go version -m` prints); a .tar.gz is read for the binary in it.
//	go run ./hack/release sums -dist dist
//	    dist/SHA256SUMS over every other file in dist/ (sha256sum -c reads it).
//
// Nothing here reaches the network.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"text/template"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// module is the main module's path: the SBOM's subject.
const module = "github.com/flightfeed/flightfeed"

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "archive":
		err = archiveCmd(args)
	case "krew":
		err = krewCmd(args)
	case "sbom":
		err = sbomCmd(args)
	case "sums":
		err = sumsCmd(args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: release archive|krew|sbom|sums [flags]")
	os.Exit(2)
}

// semver is the version a release may carry: x.y.z with an optional
// pre-release (no build metadata: an OCI tag cannot carry '+').
var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

func checkVersion(v string) error {
	if !semver.MatchString(v) {
		return fmt.Errorf("version %q is not x.y.z (a release version, without a leading v)", v)
	}
	return nil
}

// krewManifest is the krew manifest's name in the release folder (the
// plugin's name, as krew-index names manifests).
const krewManifest = "flightfeed.yaml"

func krewCmd(args []string) error {
	fs := flag.NewFlagSet("krew", flag.ExitOnError)
	version := fs.String("version", "", "the release version x.y.z (the manifest says vx.y.z, as krew wants)")
	dist := fs.String("dist", "dist", "folder with the plugin archives; the manifest is written there")
	tmpl := fs.String("template", "hack/krew/flightfeed.yaml", "the krew-release-bot template")
	platforms := fs.String("platforms", "", "the OS/ARCH list the archives were built for (space-separated)")
	out := fs.String("out", "", "output file (default DIST/"+krewManifest+")")
	_ = fs.Parse(args)
	if err := checkVersion(*version); err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(*dist, krewManifest)
	}
	src, err := os.ReadFile(*tmpl)
	if err != nil {
		return fmt.Errorf("read the krew template: %w", err)
	}
	b, err := renderKrew(src, "v"+*version, *dist, strings.Fields(*platforms))
	if err != nil {
		return fmt.Errorf("render %s: %w", *tmpl, err)
	}
	return writeFile(*out, b)
}

// renderKrew renders the krew-release-bot template with tag as TagName;
// addURIAndSha answers with the uri and the sha256 of the archive of that
// name in dist. Platforms outside keep are dropped; every one kept must
// have its archive.
func renderKrew(src []byte, tag, dist string, keep []string) ([]byte, error) {
	missing := map[string]bool{}
	funcs := template.FuncMap{"addURIAndSha": func(uri, tag string) (string, error) {
		// The bot renders the uri's own {{ .TagName }} first.
		uri = strings.ReplaceAll(uri, "{{ .TagName }}", tag)
		name := path.Base(uri)
		sum, err := fileSHA256(filepath.Join(dist, name))
		if errors.Is(err, os.ErrNotExist) {
			missing[name] = true
			return "uri: " + uri, nil
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("uri: %s\n    sha256: %s", uri, sum), nil
	}}
	t, err := template.New("krew").Funcs(funcs).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, map[string]string{"TagName": tag}); err != nil {
		return nil, err
	}

	var doc yaml.Node
	if err := yaml.Unmarshal(buf.Bytes(), &doc); err != nil {
		return nil, fmt.Errorf("the rendered manifest is not YAML: %w", err)
	}
	root := doc.Content[0]
	root.HeadComment = fmt.Sprintf("krew plugin manifest of \"kubectl flightfeed\" %s (make release, from hack/krew/flightfeed.yaml).\n"+
		"Install without the krew index:\n"+
		"  kubectl krew install --manifest=flightfeed.yaml --archive=kubectl-flightfeed_OS_ARCH.tar.gz", tag)
	// The template's own comment (about the bot) is the first key's.
	doc.HeadComment = ""
	if len(root.Content) > 0 {
		root.Content[0].HeadComment = ""
	}
	platforms := lookup(lookup(root, "spec"), "platforms")
	if platforms == nil || platforms.Kind != yaml.SequenceNode {
		return nil, errors.New("the manifest has no spec.platforms list")
	}
	var kept []*yaml.Node
	seen := map[string]bool{}
	for _, p := range platforms.Content {
		labels := lookup(lookup(p, "selector"), "matchLabels")
		osName, arch := scalar(lookup(labels, "os")), scalar(lookup(labels, "arch"))
		plat := osName + "/" + arch
		if !slices.Contains(keep, plat) {
			continue
		}
		seen[plat] = true
		if uri := scalar(lookup(p, "uri")); missing[path.Base(uri)] {
			return nil, fmt.Errorf("%s: no archive %s in %s", plat, path.Base(uri), dist)
		}
		if err := checkKrewFiles(p, osName); err != nil {
			return nil, fmt.Errorf("%s: %w", plat, err)
		}
		kept = append(kept, p)
	}
	for _, p := range keep {
		if !seen[p] {
			return nil, fmt.Errorf("the template has no platform %s", p)
		}
	}
	platforms.Content = kept
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// checkKrewFiles holds a platform of the krew manifest to the archive
// archiveCmd writes for goos: its files: list copies exactly
// pluginFiles(goos), by name, into the plugin's folder, and its bin is the
// plugin. krew installs what files: names and nothing else of the archive,
// so a file the list misses (the completion script) never reaches the
// user, and one the archive lacks fails the install.
func checkKrewFiles(p *yaml.Node, goos string) error {
	want := pluginFiles(goos)
	if bin := scalar(lookup(p, "bin")); bin != want[0] {
		return fmt.Errorf("bin is %q, want %q", bin, want[0])
	}
	files := lookup(p, "files")
	if files == nil || files.Kind != yaml.SequenceNode {
		return fmt.Errorf("no files: list (want %s)", strings.Join(want, ", "))
	}
	var got []string
	for _, f := range files.Content {
		from, to := scalar(lookup(f, "from")), scalar(lookup(f, "to"))
		if to != "." {
			return fmt.Errorf("files: %s goes to %q, want \".\" (next to the plugin)", from, to)
		}
		got = append(got, from)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("files: copies %v, the archive holds %v", got, want)
	}
	return nil
}

// lookup returns the value of key in a mapping node, or nil.
func lookup(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func scalar(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	return n.Value
}

func fileSHA256(name string) (string, error) {
	f, err := os.Open(name) //nolint:gosec // a release file named by the caller
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeFile(name string, b []byte) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil { //nolint:gosec // release files are public
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// The CycloneDX 1.5 JSON subset the SBOM uses.
type (
	bom struct {
		BOMFormat    string       `json:"bomFormat"`
		SpecVersion  string       `json:"specVersion"`
		Version      int          `json:"version"`
		Metadata     bomMetadata  `json:"metadata"`
		Components   []component  `json:"components"`
		Dependencies []dependency `json:"dependencies"`
	}
	bomMetadata struct {
		Tools      bomTools  `json:"tools"`
		Component  component `json:"component"`
		Properties []prop    `json:"properties,omitempty"`
	}
	bomTools struct {
		Components []component `json:"components"`
	}
	component struct {
		Type       string `json:"type"`
		BOMRef     string `json:"bom-ref,omitempty"`
		Name       string `json:"name"`
		Version    string `json:"version,omitempty"`
		PURL       string `json:"purl,omitempty"`
		Hashes     []hash `json:"hashes,omitempty"`
		Properties []prop `json:"properties,omitempty"`
	}
	hash struct {
		Alg     string `json:"alg"`
		Content string `json:"content"`
	}
	prop struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	dependency struct {
		Ref       string   `json:"ref"`
		DependsOn []string `json:"dependsOn"`
	}
)

func sbomCmd(args []string) error {
	fs := flag.NewFlagSet("sbom", flag.ExitOnError)
	version := fs.String("version", "", "the release version x.y.z")
	commit := fs.String("commit", "", "the commit the binaries were built from")
	out := fs.String("out", "", "the SBOM file to write (required)")
	_ = fs.Parse(args)
	if err := checkVersion(*version); err != nil {
		return err
	}
	if *out == "" || fs.NArg() == 0 {
		return errors.New("sbom: -out and at least one binary or archive are required")
	}
	var bins []binary
	for _, name := range fs.Args() {
		bs, err := readBinaries(name)
		if err != nil {
			return err
		}
		bins = append(bins, bs...)
	}
	b, err := makeSBOM(*version, *commit, bins)
	if err != nil {
		return err
	}
	return writeFile(*out, b)
}

// binary is one Go binary's name (as shipped) and build information.
type binary struct {
	name string
	info *debug.BuildInfo
}

// readBinaries reads the build information of a Go binary, or of the
// plugin's binary in a plugin archive (its other files are no Go binaries).
func readBinaries(name string) ([]binary, error) {
	if !strings.HasSuffix(name, ".tar.gz") {
		info, err := buildinfo.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read the build information of %s: %w", name, err)
		}
		return []binary{{name: filepath.Base(name), info: info}}, nil
	}
	f, err := os.Open(name) //nolint:gosec // a release archive named by the caller
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var out []binary
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if h.Typeflag != tar.TypeReg || h.Name != pluginBinary && h.Name != pluginBinary+".exe" {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		info, err := buildinfo.Read(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("read the build information of %s in %s: %w", h.Name, name, err)
		}
		out = append(out, binary{name: strings.TrimSuffix(filepath.Base(name), ".tar.gz") + "/" + h.Name, info: info})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no %s", name, pluginBinary)
	}
	return out, nil
}

func purl(path, version string) string {
	return "pkg:golang/" + path + "@" + version
}

// makeSBOM lists every module the binaries link (a replaced module as its
// replacement), each with the binaries that link it, and the Go standard
// library of the toolchain that built them.
func makeSBOM(version, commit string, bins []binary) ([]byte, error) {
	type mod struct {
		path, version, sum string
		in                 map[string]bool
	}
	mods := map[string]*mod{}
	goVersions := map[string]bool{}
	for _, b := range bins {
		if b.info.Main.Path != module {
			return nil, fmt.Errorf("%s is not a binary of %s (its main module is %q)", b.name, module, b.info.Main.Path)
		}
		goVersions[b.info.GoVersion] = true
		for _, d := range b.info.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			key := d.Path + "@" + d.Version
			m := mods[key]
			if m == nil {
				m = &mod{path: d.Path, version: d.Version, sum: d.Sum, in: map[string]bool{}}
				mods[key] = m
			}
			m.in[b.name] = true
		}
	}
	if len(goVersions) != 1 {
		return nil, fmt.Errorf("the binaries were built by different Go toolchains: %v", goVersions)
	}
	main := component{Type: "application", BOMRef: purl(module, "v"+version), Name: module, Version: version, PURL: purl(module, "v"+version)}
	if commit != "" {
		main.Properties = []prop{{Name: "vcs.revision", Value: commit}}
	}
	doc := bom{
		BOMFormat: "CycloneDX", SpecVersion: "1.5", Version: 1,
		Metadata: bomMetadata{
			Tools:     bomTools{Components: []component{{Type: "application", Name: module + "/hack/release"}}},
			Component: main,
		},
	}
	deps := dependency{Ref: main.BOMRef}
	for gv := range goVersions {
		v := strings.TrimPrefix(gv, "go")
		ref := purl("stdlib", v)
		doc.Components = append(doc.Components, component{Type: "library", BOMRef: ref, Name: "stdlib", Version: v, PURL: ref,
			Properties: []prop{{Name: "go.toolchain", Value: gv}}})
		deps.DependsOn = append(deps.DependsOn, ref)
	}
	keys := make([]string, 0, len(mods))
	for k := range mods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		m := mods[k]
		in := make([]string, 0, len(m.in))
		for b := range m.in {
			in = append(in, b)
		}
		sort.Strings(in)
		c := component{Type: "library", BOMRef: purl(m.path, m.version), Name: m.path, Version: m.version, PURL: purl(m.path, m.version),
			Properties: []prop{{Name: "linked.by", Value: strings.Join(in, ",")}}}
		if m.sum != "" {
			c.Properties = append(c.Properties, prop{Name: "go.sum", Value: m.sum})
		}
		doc.Components = append(doc.Components, c)
		deps.DependsOn = append(deps.DependsOn, c.BOMRef)
	}
	doc.Dependencies = []dependency{deps}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// SumsFile is the checksum file's name in the release folder.
const SumsFile = "SHA256SUMS"

func sumsCmd(args []string) error {
	fs := flag.NewFlagSet("sums", flag.ExitOnError)
	dist := fs.String("dist", "dist", "the release folder")
	_ = fs.Parse(args)
	b, err := sums(*dist)
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(*dist, SumsFile), b)
}

// sums is SHA256SUMS of every regular file in dist but itself, by name,
// in the format sha256sum writes and checks.
func sums(dist string) ([]byte, error) {
	entries, err := os.ReadDir(dist)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dist, err)
	}
	var buf bytes.Buffer
	for _, e := range entries {
		if e.Name() == SumsFile || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("%s/%s is not a regular file: a release folder holds files only", dist, e.Name())
		}
		sum, err := fileSHA256(filepath.Join(dist, e.Name()))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&buf, "%s  %s\n", sum, e.Name())
	}
	return buf.Bytes(), nil
}
