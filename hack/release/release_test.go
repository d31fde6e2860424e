package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"sigs.k8s.io/yaml"
)

// make release builds a release into a temporary folder (the plugin for
// this machine's platform only, to keep it short; make release builds every
// platform the same way) and every part of it says the same version and
// commit: the image's tag, labels and the binary in it, the chart's
// version, appVersion and image.tag, the plugin archive's binary, the krew
// manifest's version and sha256, the SBOM, and SHA256SUMS checks. The chart
// then goes through an OCI registry (in-process) and renders from it with
// that image. The repository's Chart.yaml is left as it was.
func TestReleaseVersionsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release: the operator's and the plugin's binaries, the image, the chart package")
	}
	const version = "9.8.7"
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	chartBefore := readFile(t, filepath.Join(root, "charts/flightfeed/Chart.yaml"))
	valuesBefore := readFile(t, filepath.Join(root, "charts/flightfeed/values.yaml"))
	commit := gitCommit(t, root)
	helm := helmPath(t, root)
	dist := filepath.Join(t.TempDir(), "dist")
	platform := runtime.GOOS + "/" + runtime.GOARCH
	archiveName := "kubectl-flightfeed_" + runtime.GOOS + "_" + runtime.GOARCH + ".tar.gz"

	mk := exec.Command("make", "--no-print-directory", "release", "VERSION="+version, "DIST="+dist,
		"PLUGIN_PLATFORMS="+platform, "ALLOW_DIRTY=1")
	mk.Dir = root
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	if !bytes.Equal(readFile(t, filepath.Join(root, "charts/flightfeed/Chart.yaml")), chartBefore) ||
		!bytes.Equal(readFile(t, filepath.Join(root, "charts/flightfeed/values.yaml")), valuesBefore) {
		t.Error("make release changed the repository's charts/flightfeed/Chart.yaml or values.yaml")
	}

	// The files, and nothing else.
	want := []string{"SHA256SUMS", "flightfeed-" + version + ".sbom.cdx.json", "flightfeed-" + version + ".tgz",
		"flightfeed-image-" + version + ".tar", "flightfeed.yaml", archiveName, archiveName + ".sha256"}
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("dist holds %v, want %v", got, want)
	}

	t.Run("SHA256SUMS", func(t *testing.T) {
		listed := map[string]string{}
		sc := bufio.NewScanner(bytes.NewReader(readFile(t, filepath.Join(dist, "SHA256SUMS"))))
		for sc.Scan() {
			sum, name, ok := strings.Cut(sc.Text(), "  ")
			if !ok {
				t.Fatalf("SHA256SUMS line %q is not 'SUM  NAME'", sc.Text())
			}
			listed[name] = sum
		}
		for _, name := range want {
			if name == "SHA256SUMS" {
				continue
			}
			if sum := sha256Hex(readFile(t, filepath.Join(dist, name))); listed[name] != sum {
				t.Errorf("SHA256SUMS says %s is %q, it is %s", name, listed[name], sum)
			}
			delete(listed, name)
		}
		if len(listed) != 0 {
			t.Errorf("SHA256SUMS lists files that are not in dist: %v", listed)
		}
	})

	t.Run("image", func(t *testing.T) {
		blobs := untar(t, readFile(t, filepath.Join(dist, "flightfeed-image-"+version+".tar")))
		for name, b := range blobs {
			if d, ok := strings.CutPrefix(name, "blobs/sha256/"); ok && d != "" && sha256Hex(b) != d {
				t.Errorf("blob %s has digest %s", name, sha256Hex(b))
			}
		}
		var index struct {
			Manifests []struct {
				Digest      string            `json:"digest"`
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		mustJSON(t, blobs["index.json"], &index)
		if len(index.Manifests) != 1 {
			t.Fatalf("index.json names %d manifests", len(index.Manifests))
		}
		m := index.Manifests[0]
		if m.Annotations["org.opencontainers.image.ref.name"] != version || m.Annotations["io.containerd.image.name"] != "docker.io/library/flightfeed:"+version {
			t.Errorf("the image is tagged %v, want %s", m.Annotations, version)
		}
		var manifest struct {
			Config struct{ Digest string }   `json:"config"`
			Layers []struct{ Digest string } `json:"layers"`
		}
		mustJSON(t, blob(t, blobs, m.Digest), &manifest)
		var config struct {
			Config struct{ Labels map[string]string } `json:"config"`
		}
		mustJSON(t, blob(t, blobs, manifest.Config.Digest), &config)
		if l := config.Config.Labels; l["org.opencontainers.image.version"] != version || l["org.opencontainers.image.revision"] != commit {
			t.Errorf("image labels %v, want version %s and revision %s", l, version, commit)
		}
		if len(manifest.Layers) != 1 {
			t.Fatalf("the image has %d layers, want 1", len(manifest.Layers))
		}
		layer := untar(t, gunzip(t, blob(t, blobs, manifest.Layers[0].Digest)))
		bin := writeExecutable(t, layer["flightfeed"])
		runVersion(t, "the image's /flightfeed", bin, version, commit)
	})

	t.Run("chart", func(t *testing.T) {
		files := untar(t, gunzip(t, readFile(t, filepath.Join(dist, "flightfeed-"+version+".tgz"))))
		var chart struct{ Version, AppVersion string }
		mustYAML(t, files["flightfeed/Chart.yaml"], &chart)
		if chart.Version != version || chart.AppVersion != version {
			t.Errorf("the packaged Chart.yaml says version %q, appVersion %q; want %s", chart.Version, chart.AppVersion, version)
		}
		var values struct{ Image struct{ Tag string } }
		mustYAML(t, files["flightfeed/values.yaml"], &values)
		if values.Image.Tag != version {
			t.Errorf("the packaged values.yaml's image.tag is %q, want %s", values.Image.Tag, version)
		}
		if !strings.Contains(string(files["flightfeed/README.md"]), version) {
			t.Errorf("the packaged README does not name %s", version)
		}
	})

	t.Run("plugin", func(t *testing.T) {
		archive := readFile(t, filepath.Join(dist, archiveName))
		if line := strings.TrimSpace(string(readFile(t, filepath.Join(dist, archiveName+".sha256")))); line != sha256Hex(archive)+"  "+archiveName {
			t.Errorf("%s.sha256 is %q, the archive's sha256 is %s", archiveName, line, sha256Hex(archive))
		}
		// The plugin, its completion script for kubectl (not on
		// windows), the LICENSE; executables executable.
		files, modes := untar(t, gunzip(t, archive)), tarModes(t, gunzip(t, archive))
		want := pluginFiles(runtime.GOOS)
		var got []string
		for name := range files {
			got = append(got, name)
		}
		sort.Strings(got)
		if sorted := slices.Sorted(slices.Values(want)); !slices.Equal(got, sorted) {
			t.Fatalf("%s holds %v, want %v", archiveName, got, sorted)
		}
		for _, name := range want {
			if wantMode := int64(0o755); name != "LICENSE" && modes[name] != wantMode {
				t.Errorf("%s: %s has mode %o, want %o", archiveName, name, modes[name], wantMode)
			}
		}
		if runtime.GOOS != "windows" {
			if !slices.Contains(want, "kubectl_complete-flightfeed") {
				t.Errorf("%s lacks kubectl_complete-flightfeed", archiveName)
			}
			if script := readFile(t, filepath.Join(root, "cmd/kubectl-flightfeed/kubectl_complete-flightfeed")); !bytes.Equal(files["kubectl_complete-flightfeed"], script) {
				t.Errorf("%s's kubectl_complete-flightfeed is not cmd/kubectl-flightfeed's:\n%s", archiveName, files["kubectl_complete-flightfeed"])
			}
		}
		if !bytes.Equal(files["LICENSE"], readFile(t, filepath.Join(root, "LICENSE"))) {
			t.Errorf("%s's LICENSE is not the repository's", archiveName)
		}
		bin := writeExecutable(t, files[want[0]])
		runVersion(t, archiveName, bin, version, commit)
	})

	t.Run("krew", func(t *testing.T) {
		var m struct {
			Spec struct {
				Version   string
				Platforms []struct {
					Selector struct{ MatchLabels map[string]string } `json:"selector"`
					URI      string                                  `json:"uri"`
					Sha256   string                                  `json:"sha256"`
					Bin      string                                  `json:"bin"`
					Files    []struct{ From, To string }             `json:"files"`
				}
			}
		}
		mustYAML(t, readFile(t, filepath.Join(dist, "flightfeed.yaml")), &m)
		if m.Spec.Version != "v"+version {
			t.Errorf("the krew manifest's version is %q, want v%s", m.Spec.Version, version)
		}
		if len(m.Spec.Platforms) != 1 {
			t.Fatalf("the krew manifest has %d platforms, want the one built (%s)", len(m.Spec.Platforms), platform)
		}
		p := m.Spec.Platforms[0]
		if got := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]; got != platform {
			t.Errorf("the krew manifest's platform is %s, want %s", got, platform)
		}
		if filepath.Base(p.URI) != archiveName || !strings.Contains(p.URI, "/v"+version+"/") {
			t.Errorf("the krew manifest's uri is %s, want .../v%s/%s", p.URI, version, archiveName)
		}
		if sum := sha256Hex(readFile(t, filepath.Join(dist, archiveName))); p.Sha256 != sum {
			t.Errorf("the krew manifest's sha256 is %q, %s's is %s", p.Sha256, archiveName, sum)
		}
		// krew installs what files: names: every file of the archive, the
		// completion script included.
		var installed []string
		for _, f := range p.Files {
			installed = append(installed, f.From)
		}
		inArchive := slices.Sorted(maps.Keys(untar(t, gunzip(t, readFile(t, filepath.Join(dist, archiveName))))))
		if slices.Sort(installed); !slices.Equal(installed, inArchive) || p.Bin != pluginFiles(runtime.GOOS)[0] {
			t.Errorf("the krew manifest installs %v (bin %s) of %s, which holds %v", installed, p.Bin, archiveName, inArchive)
		}
	})

	t.Run("SBOM", func(t *testing.T) {
		var sbom bom
		mustJSON(t, readFile(t, filepath.Join(dist, "flightfeed-"+version+".sbom.cdx.json")), &sbom)
		c := sbom.Metadata.Component
		if sbom.BOMFormat != "CycloneDX" || c.Name != module || c.Version != version ||
			!slices.Contains(c.Properties, prop{Name: "vcs.revision", Value: commit}) {
			t.Errorf("SBOM subject %+v, want %s %s at %s", c, module, version, commit)
		}
		have := map[string]bool{}
		for _, c := range sbom.Components {
			have[c.PURL] = true
		}
		// Every module the plugin's binary links is listed (the image's
		// binary was checked by the same code above: the SBOM reads both).
		files := untar(t, gunzip(t, readFile(t, filepath.Join(dist, archiveName))))
		info, err := buildinfo.Read(bytes.NewReader(files[pluginFiles(runtime.GOOS)[0]]))
		if err != nil {
			t.Fatal(err)
		}
		if !have[purl("stdlib", strings.TrimPrefix(info.GoVersion, "go"))] {
			t.Errorf("the SBOM lacks the standard library %s", info.GoVersion)
		}
		if len(info.Deps) < 50 {
			t.Fatalf("the plugin links only %d modules", len(info.Deps))
		}
		for _, d := range info.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			if !have[purl(d.Path, d.Version)] {
				t.Errorf("the SBOM lacks %s %s", d.Path, d.Version)
			}
		}
	})

	t.Run("chart from an OCI registry", func(t *testing.T) {
		srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		defer srv.Close()
		repo := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/charts"
		home := t.TempDir()
		run := func(args ...string) string {
			t.Helper()
			cmd := exec.Command(helm, args...)
			cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
				"HELM_DATA_HOME="+filepath.Join(home, "data"), "HELM_REGISTRY_CONFIG="+filepath.Join(home, "registry.json"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
			}
			return string(out)
		}
		run("push", filepath.Join(dist, "flightfeed-"+version+".tgz"), repo, "--plain-http")
		var chart struct{ Version, AppVersion string }
		mustYAML(t, []byte(run("show", "chart", repo+"/flightfeed", "--version", version, "--plain-http")), &chart)
		if chart.Version != version || chart.AppVersion != version {
			t.Errorf("the registry's chart says version %q, appVersion %q", chart.Version, chart.AppVersion)
		}
		out := run("template", "ff", repo+"/flightfeed", "--version", version, "--plain-http", "--kube-version", "1.37.0",
			"--namespace", "flightfeed-system", "--set", "image.repository=registry.example/flightfeed")
		images := map[string]bool{}
		for _, line := range strings.Split(out, "\n") {
			if img, ok := strings.CutPrefix(strings.TrimSpace(line), "image: "); ok {
				images[strings.Trim(img, `"`)] = true
			}
		}
		if len(images) != 1 || !images["registry.example/flightfeed:"+version] {
			t.Errorf("the chart from the registry renders the images %v, want registry.example/flightfeed:%s alone", images, version)
		}
	})
}

// gitCommit is what a release built from the work tree says it was built
// from: HEAD, and -dirty with uncommitted changes.
func gitCommit(t *testing.T, root string) string {
	t.Helper()
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	commit := git("rev-parse", "HEAD")
	if git("status", "--porcelain") != "" {
		commit += "-dirty"
	}
	return commit
}

// helmPath is the pinned helm hack/helm-check.sh uses (installed into the
// tool cache the first time).
func helmPath(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("bash", "hack/cluster/helm.sh")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/cluster/helm.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// runVersion runs `BINARY version -o json`: the flightfeed_build_info
// labels (internal/cli's tests hold the two equal). (The linker flags are
// not in the binaries' build information: -trimpath leaves -ldflags out.)
func runVersion(t *testing.T, what, bin, version, commit string) {
	t.Helper()
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("%s version -o json: %v", what, err)
	}
	var got map[string]string
	mustJSON(t, out, &got)
	if got["version"] != version || got["revision"] != commit {
		t.Errorf("%s version says %v, want version %s revision %s", what, got, version, commit)
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeExecutable(t *testing.T, b []byte) string {
	t.Helper()
	if len(b) == 0 {
		t.Fatal("no binary")
	}
	name := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(name, b, 0o700); err != nil {
		t.Fatal(err)
	}
	return name
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// untar returns a tar's regular files by name.
func untar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(h.Name, "./")] = body
	}
}

// tarModes returns a tar's regular files' modes by name.
func tarModes(t *testing.T, b []byte) map[string]int64 {
	t.Helper()
	modes := map[string]int64{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return modes
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			modes[strings.TrimPrefix(h.Name, "./")] = h.Mode
		}
	}
}

func blob(t *testing.T, blobs map[string][]byte, digest string) []byte {
	t.Helper()
	b, ok := blobs["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]
	if !ok {
		t.Fatalf("the image archive has no blob %s", digest)
	}
	return b
}

func mustJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
}

func mustYAML(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
}
