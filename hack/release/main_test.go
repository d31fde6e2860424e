package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// The krew manifest of a release: the template rendered with vVERSION,
// each kept platform with the sha256 of its archive, the others left out,
// and a kept platform without its archive refused.
func TestRenderKrew(t *testing.T) {
	src, err := os.ReadFile("../krew/flightfeed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	for name, body := range map[string]string{"kubectl-flightfeed_linux_amd64.tar.gz": "linux", "kubectl-flightfeed_windows_arm64.tar.gz": "windows"} {
		if err := os.WriteFile(filepath.Join(dist, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := renderKrew(src, "v1.2.3", dist, []string{"linux/amd64", "windows/arm64"})
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
		Spec       struct {
			Version   string `json:"version"`
			Platforms []struct {
				URI    string `json:"uri"`
				Sha256 string `json:"sha256"`
				Bin    string `json:"bin"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(out, &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if m.Spec.Version != "v1.2.3" || len(m.Spec.Platforms) != 2 {
		t.Fatalf("version %q, %d platforms; want v1.2.3 and 2:\n%s", m.Spec.Version, len(m.Spec.Platforms), out)
	}
	for i, want := range []struct{ uri, body, bin string }{
		{"https://github.com/flightfeed/flightfeed/releases/download/v1.2.3/kubectl-flightfeed_linux_amd64.tar.gz", "linux", "kubectl-flightfeed"},
		{"https://github.com/flightfeed/flightfeed/releases/download/v1.2.3/kubectl-flightfeed_windows_arm64.tar.gz", "windows", "kubectl-flightfeed.exe"},
	} {
		p := m.Spec.Platforms[i]
		if p.URI != want.uri || p.Sha256 != sha256Hex([]byte(want.body)) || p.Bin != want.bin {
			t.Errorf("platform %d: %+v, want %s with the sha256 of %q", i, p, want.uri, want.body)
		}
	}
	if strings.Contains(string(out), "{{") || strings.Contains(string(out), "krew-release-bot") {
		t.Errorf("the rendered manifest keeps the template's actions or comments:\n%s", out)
	}

	if _, err := renderKrew(src, "v1.2.3", dist, []string{"linux/amd64", "darwin/arm64"}); err == nil || !strings.Contains(err.Error(), "kubectl-flightfeed_darwin_arm64.tar.gz") {
		t.Errorf("a platform without its archive: err = %v, want it named", err)
	}
	if _, err := renderKrew(src, "v1.2.3", dist, []string{"plan9/amd64"}); err == nil {
		t.Error("a platform the template lacks was accepted")
	}
}

// SHA256SUMS lists every other file of the folder with its sha256, in
// sha256sum's format, and refuses a folder with a subfolder.
func TestSums(t *testing.T) {
	dist := t.TempDir()
	for name, body := range map[string]string{"b.tgz": "bee", "a.yaml": "ay", SumsFile: "old"} {
		if err := os.WriteFile(filepath.Join(dist, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := sums(dist)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256Hex([]byte("ay")) + "  a.yaml\n" + sha256Hex([]byte("bee")) + "  b.tgz\n"
	if string(got) != want {
		t.Errorf("sums:\n%s\nwant:\n%s", got, want)
	}
	if err := os.Mkdir(filepath.Join(dist, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := sums(dist); err == nil {
		t.Error("a folder in the release folder was accepted")
	}
}

// Every version section of the CHANGELOG is "## X.Y.Z — YYYY-MM-DD" (the
// day it was cut), newest first; only an "## Unreleased" section above them
// has no date. hack/helm-check.sh looks for the chart version's section in
// this form.
func TestChangelogVersionHeadingsAreDated(t *testing.T) {
	text, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`^## ((0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)) — ([0-9]{4}-[0-9]{2}-[0-9]{2})$`)
	var lastDay time.Time
	var lastVersion []int
	versions := 0
	for i, line := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(line, "## ") {
			continue
		}
		if line == "## Unreleased" {
			if versions > 0 {
				t.Errorf("CHANGELOG.md:%d: Unreleased below a version section", i+1)
			}
			continue
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("CHANGELOG.md:%d: %q is not '## X.Y.Z — YYYY-MM-DD'", i+1, line)
			continue
		}
		day, err := time.Parse(time.DateOnly, m[5])
		if err != nil {
			t.Errorf("CHANGELOG.md:%d: %v", i+1, err)
			continue
		}
		v := []int{atoi(m[2]), atoi(m[3]), atoi(m[4])}
		if versions > 0 && (day.After(lastDay) || !less(v, lastVersion)) {
			t.Errorf("CHANGELOG.md:%d: %s is not older than the section above it", i+1, line)
		}
		lastDay, lastVersion = day, v
		versions++
	}
	if versions == 0 {
		t.Fatal("CHANGELOG.md has no version section")
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func less(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
