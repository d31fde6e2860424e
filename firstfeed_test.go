package main

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flightfeed/flightfeed/api/v1alpha1"
	"github.com/flightfeed/flightfeed/internal/pumppod"
)

// TestFirstFeedStartsFromAReleasesFiles: docs/first-feed.md takes a user
// from a cluster of their own and a release's files to a running feed, and
// what it names is what the code makes and takes:
//   - the release's files by the names hack/release.sh and hack/release
//     give them (with their $version), every one of them, and no other;
//     its version= is the chart's appVersion;
//   - every chart value it sets (--set) or names exists in
//     charts/flightfeed/values.yaml;
//   - its Secrets and FlightFeed, as written, are what a pump pod takes:
//     strictly the CRD's fields, a valid spec, Secrets labelled and
//     annotated for the feed, DSNs the pump accepts (pumppod.ResolveFeedWith);
//   - every FlightFeed field it names (spec.…) is in the CRD, every
//     flightfeed.aero/ key is one the API defines, every resource
//     `kubectl get` or `wait` names is a CRD's name, every condition it
//     waits for is a condition type;
//   - it keeps `make demo` for a bare machine, linking demo.md.
func TestFirstFeedStartsFromAReleasesFiles(t *testing.T) {
	doc := readText(t, "docs/first-feed.md")

	t.Run("release files", func(t *testing.T) {
		files := releaseFiles(t)
		for _, name := range files {
			if !strings.Contains(doc, name) {
				t.Errorf("docs/first-feed.md does not name the release file %s (hack/release.sh, hack/release)", name)
			}
		}
		for _, name := range regexp.MustCompile(`\bflightfeed-[A-Za-z0-9$._-]*\.(?:tar|tgz|json)\b`).FindAllString(doc, -1) {
			if !slices.Contains(files, name) {
				t.Errorf("docs/first-feed.md names %s, which a release does not hold (it holds %v)", name, files)
			}
		}
		archives := krewArchives(t)
		found := 0
		for _, name := range regexp.MustCompile(`\bkubectl-flightfeed_[A-Za-z0-9]+_[A-Za-z0-9]+\.tar\.gz\b`).FindAllString(doc, -1) {
			found++
			if name != "kubectl-flightfeed_OS_ARCH.tar.gz" && !slices.Contains(archives, name) {
				t.Errorf("docs/first-feed.md names the plugin archive %s; a release's are %v", name, archives)
			}
		}
		if found == 0 {
			t.Error("docs/first-feed.md names no plugin archive")
		}
		appVersion := regexp.MustCompile(`(?m)^appVersion: *"?([^"\n]+)"?$`).FindStringSubmatch(readText(t, "charts/flightfeed/Chart.yaml"))
		m := regexp.MustCompile(`(?m)^version=(\S+)$`).FindStringSubmatch(doc)
		switch {
		case m == nil:
			t.Error("docs/first-feed.md sets no version= for its commands")
		case appVersion == nil || m[1] != appVersion[1]:
			t.Errorf("docs/first-feed.md sets version=%s; the chart's appVersion is %v", m[1], appVersion)
		}
	})

	t.Run("chart values", func(t *testing.T) {
		var values map[string]any
		if err := yaml.Unmarshal([]byte(readText(t, "charts/flightfeed/values.yaml")), &values); err != nil {
			t.Fatal(err)
		}
		set := regexp.MustCompile(`--set(?:-string)? ([A-Za-z0-9_.]+)=`).FindAllStringSubmatch(doc, -1)
		if len(set) == 0 {
			t.Error("docs/first-feed.md sets no chart value (helm install --set image.repository=…)")
		}
		keys := map[string]bool{}
		for _, m := range set {
			keys[m[1]] = true
		}
		// A value named in the text: a dotted path under a top-level key.
		for _, m := range regexp.MustCompile("`([A-Za-z][A-Za-z0-9]*(?:\\.[A-Za-z][A-Za-z0-9]*)+)`").FindAllStringSubmatch(doc, -1) {
			if _, ok := values[strings.Split(m[1], ".")[0]]; ok {
				keys[m[1]] = true
			}
		}
		for key := range keys {
			if !valuesHave(values, key) {
				t.Errorf("docs/first-feed.md sets or names the chart value %s, which charts/flightfeed/values.yaml does not have", key)
			}
		}
	})

	t.Run("manifests", func(t *testing.T) {
		feeds, secrets := docManifests(t, doc)
		if len(feeds) != 1 {
			t.Fatalf("docs/first-feed.md holds %d FlightFeeds in its yaml blocks, want 1", len(feeds))
		}
		ff := feeds[0]
		for key, s := range secrets {
			if s.Labels[v1alpha1.SecretLabel] != "true" || !slices.Contains(strings.Split(s.Annotations[v1alpha1.FeedsAnnotation], ","), ff.Name) {
				t.Errorf("Secret %s is not labelled %s=true or does not name %s in %s", key, v1alpha1.SecretLabel, ff.Name, v1alpha1.FeedsAnnotation)
			}
		}
		if _, err := pumppod.ResolveFeedWith(context.Background(), secrets, ff, pumppod.ResolveOptions{InCluster: true}); err != nil {
			t.Errorf("a pump pod refuses the FlightFeed of docs/first-feed.md: %v", err)
		}
	})

	t.Run("names", func(t *testing.T) {
		// Label and annotation keys: the API's, and the chart's label of
		// namespaces that may reach the feeds (not a resource's
		// TYPE.flightfeed.aero/NAME, nor a token audience
		// flightfeed.aero/NS/NAME).
		keys := []string{v1alpha1.SecretLabel, v1alpha1.FeedsAnnotation, v1alpha1.BrokersAnnotation, v1alpha1.LabelFeed, v1alpha1.LabelDay,
			v1alpha1.GroupVersion.String()}
		var values struct {
			NetworkPolicy struct {
				IngressNamespaceLabels map[string]string `json:"ingressNamespaceLabels"`
			} `json:"networkPolicy"`
		}
		if err := yaml.Unmarshal([]byte(readText(t, "charts/flightfeed/values.yaml")), &values); err != nil {
			t.Fatal(err)
		}
		for k := range values.NetworkPolicy.IngressNamespaceLabels {
			keys = append(keys, k)
		}
		for _, m := range regexp.MustCompile(`(?:^|[^A-Za-z0-9.])(flightfeed\.aero/[a-z0-9]+)(?:[^a-z0-9/]|$)`).FindAllStringSubmatch(doc, -1) {
			if !slices.Contains(keys, m[1]) {
				t.Errorf("docs/first-feed.md names %s, which is none of the API's keys %v", m[1], keys)
			}
		}
		resources := crdNames(t)
		for _, r := range kubectlResources(doc) {
			if (strings.HasPrefix(r, "ff") || strings.HasPrefix(r, "flightfeed")) && !slices.Contains(resources, r) {
				t.Errorf("docs/first-feed.md runs kubectl on %q, which is no name of the CRDs (%v)", r, resources)
			}
		}
		schema := flightFeedSchema(t)
		for _, m := range regexp.MustCompile("`(spec(?:\\.[A-Za-z]+)+)`").FindAllStringSubmatch(doc, -1) {
			if !schemaHas(schema, m[1]) {
				t.Errorf("docs/first-feed.md names the FlightFeed field %s, which the CRD does not have", m[1])
			}
		}
		conditions := stringConstants(t, "api/v1alpha1/conditions.go", "ConditionType")
		for _, m := range regexp.MustCompile(`--for=condition=([A-Za-z]+)`).FindAllStringSubmatch(doc, -1) {
			if !slices.Contains(conditions, m[1]) {
				t.Errorf("docs/first-feed.md waits for the condition %s; the FlightFeed's are %v", m[1], conditions)
			}
		}
	})

	if !strings.Contains(doc, "make demo") || !strings.Contains(doc, "](demo.md)") {
		t.Error("docs/first-feed.md does not keep `make demo` for a bare machine with a link to demo.md")
	}
}

// releaseFiles are the files of a release named as hack/release.sh names
// them ($version as there, which docs/first-feed.md sets): those it writes
// as "$dist/NAME", the krew manifest and SHA256SUMS of hack/release.
func releaseFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, m := range regexp.MustCompile(`\$dist/([A-Za-z0-9._-]*\$version[A-Za-z0-9._-]*)`).FindAllStringSubmatch(readText(t, "hack/release.sh"), -1) {
		if !slices.Contains(files, m[1]) {
			files = append(files, m[1])
		}
	}
	if len(files) < 3 {
		t.Fatalf("hack/release.sh writes %v: want the image archive, the chart and the SBOM", files)
	}
	for _, name := range []string{"SumsFile", "krewManifest"} {
		files = append(files, goStringConstant(t, "hack/release", name))
	}
	return files
}

// krewArchives are the plugin archives the krew template names (make
// release refuses a platform whose archive is missing).
func krewArchives(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`"https://[^"]+/([^/"]+\.tar\.gz)"`).FindAllStringSubmatch(readText(t, "hack/krew/flightfeed.yaml"), -1) {
		out = append(out, path.Base(m[1]))
	}
	if len(out) == 0 {
		t.Fatal("hack/krew/flightfeed.yaml names no archive")
	}
	return out
}

// valuesHave reports whether the dotted key is a path of the values.
func valuesHave(values map[string]any, key string) bool {
	var cur any = values
	for _, k := range strings.Split(key, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[k]; !ok {
			return false
		}
	}
	return true
}

// secretReader serves the Secrets of a document as the API server would.
type secretReader map[types.NamespacedName]*corev1.Secret

func (r secretReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s, ok := r[key]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	out, ok := obj.(*corev1.Secret)
	if !ok {
		return fmt.Errorf("get %T: only Secrets are served", obj)
	}
	s.DeepCopyInto(out)
	return nil
}

func (r secretReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("list: a pump reads its Secrets by name")
}

// docManifests decodes the objects of every yaml code block of doc,
// strictly: FlightFeeds and Secrets (stringData turned into data, as the
// API server does). Any other kind fails the test.
func docManifests(t *testing.T, doc string) ([]*v1alpha1.FlightFeed, secretReader) {
	t.Helper()
	var feeds []*v1alpha1.FlightFeed
	secrets := secretReader{}
	for _, block := range regexp.MustCompile("(?ms)^```yaml\n(.*?)^```$").FindAllStringSubmatch(doc, -1) {
		for _, obj := range strings.Split(block[1], "\n---\n") {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal([]byte(obj), &meta); err != nil {
				t.Fatalf("a yaml block of docs/first-feed.md: %v\n%s", err, obj)
			}
			switch meta.Kind {
			case "FlightFeed":
				var ff v1alpha1.FlightFeed
				if err := yaml.UnmarshalStrict([]byte(obj), &ff); err != nil {
					t.Fatalf("the FlightFeed of docs/first-feed.md is not one: %v\n%s", err, obj)
				}
				feeds = append(feeds, &ff)
			case "Secret":
				var s corev1.Secret
				if err := yaml.UnmarshalStrict([]byte(obj), &s); err != nil {
					t.Fatalf("a Secret of docs/first-feed.md is not one: %v\n%s", err, obj)
				}
				if s.Data == nil {
					s.Data = map[string][]byte{}
				}
				for k, v := range s.StringData {
					s.Data[k] = []byte(v)
				}
				secrets[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = &s
			default:
				t.Fatalf("docs/first-feed.md's yaml holds a %q, not a FlightFeed or a Secret:\n%s", meta.Kind, obj)
			}
		}
	}
	return feeds, secrets
}

// crdNames are the names kubectl knows the CRDs by: plural, singular,
// short names, and plural.group.
func crdNames(t *testing.T) []string {
	t.Helper()
	crds, err := filepath.Glob("config/crd/bases/*.yaml")
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	var out []string
	for _, f := range crds {
		var crd struct {
			Spec struct {
				Group string
				Names struct {
					Plural, Singular string
					ShortNames       []string `json:"shortNames"`
				}
			}
		}
		if err := yaml.Unmarshal([]byte(readText(t, f)), &crd); err != nil {
			t.Fatal(err)
		}
		n := crd.Spec.Names
		out = append(out, n.Plural, n.Singular, n.Plural+"."+crd.Spec.Group)
		out = append(out, n.ShortNames...)
	}
	return out
}

// schemaNode is a node of a CRD's OpenAPI schema.
type schemaNode struct {
	Properties map[string]schemaNode `json:"properties"`
}

// flightFeedSchema is the FlightFeed CRD's schema (its one version).
func flightFeedSchema(t *testing.T) schemaNode {
	t.Helper()
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema schemaNode `json:"openAPIV3Schema"`
				}
			}
		}
	}
	if err := yaml.Unmarshal([]byte(readText(t, "config/crd/bases/flightfeed.aero_flightfeeds.yaml")), &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("the FlightFeed CRD has %d versions, want 1", len(crd.Spec.Versions))
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// schemaHas reports whether the dotted field path is in the schema.
func schemaHas(n schemaNode, field string) bool {
	for _, k := range strings.Split(field, ".") {
		next, ok := n.Properties[k]
		if !ok {
			return false
		}
		n = next
	}
	return true
}

// kubectlResources returns the resource type of each `kubectl
// get|wait|describe` in doc: its first argument but flags and their values,
// TYPE of TYPE/NAME, each of TYPE,TYPE.
func kubectlResources(doc string) []string {
	var out []string
	for _, line := range strings.Split(doc, "\n") {
		for _, cmd := range regexp.MustCompile(`kubectl [^`+"`"+`#|]*`).FindAllString(line, -1) {
			words := strings.Fields(cmd)
			verb := -1
			for i, w := range words {
				if w == "get" || w == "wait" || w == "describe" {
					verb = i
					break
				}
			}
			if verb < 0 {
				continue
			}
			for i := verb + 1; i < len(words); i++ {
				w := words[i]
				if strings.HasPrefix(w, "-") {
					if !strings.Contains(w, "=") && slices.Contains([]string{"-n", "--namespace", "-l", "--selector", "-o", "--output", "--timeout"}, w) {
						i++
					}
					continue
				}
				for _, r := range strings.Split(w, ",") {
					r, _, _ = strings.Cut(r, "/")
					out = append(out, r)
				}
				break // then names
			}
		}
	}
	return out
}

// goStringConstant is the value of the string constant name declared in
// the Go package in dir.
func goStringConstant(t *testing.T, dir, name string) string {
	t.Helper()
	pkgs, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pkgs {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if obj := file.Scope.Lookup(name); obj != nil && obj.Kind == ast.Con {
			if vs, ok := obj.Decl.(*ast.ValueSpec); ok {
				for i, id := range vs.Names {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && id.Name == name && lit.Kind == token.STRING {
						s, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatal(err)
						}
						return s
					}
				}
			}
		}
	}
	t.Fatalf("%s declares no string constant %s", dir, name)
	return ""
}

// stringConstants returns the values of every constant of type typ in file.
func stringConstants(t *testing.T, file, typ string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typ {
			return true
		}
		for _, v := range vs.Values {
			if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, s)
			}
		}
		return true
	})
	if len(out) == 0 {
		t.Fatalf("%s declares no constant of type %s", file, typ)
	}
	return out
}
