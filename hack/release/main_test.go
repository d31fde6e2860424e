package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
				Files  []struct {
					From string `json:"from"`
					To   string `json:"to"`
				} `json:"files"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(out, &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if m.Spec.Version != "v1.2.3" || len(m.Spec.Platforms) != 2 {
		t.Fatalf("version %q, %d platforms; want v1.2.3 and 2:\n%s", m.Spec.Version, len(m.Spec.Platforms), out)
	}
	for i, want := range []struct {
		uri, body, bin string
		files          []string
	}{
		{"https://github.com/flightfeed/flightfeed/releases/download/v1.2.3/kubectl-flightfeed_linux_amd64.tar.gz", "linux", "kubectl-flightfeed",
			[]string{"kubectl-flightfeed", "kubectl_complete-flightfeed", "LICENSE"}},
		{"https://github.com/flightfeed/flightfeed/releases/download/v1.2.3/kubectl-flightfeed_windows_arm64.tar.gz", "windows", "kubectl-flightfeed.exe",
			[]string{"kubectl-flightfeed.exe", "LICENSE"}},
	} {
		p := m.Spec.Platforms[i]
		if p.URI != want.uri || p.Sha256 != sha256Hex([]byte(want.body)) || p.Bin != want.bin {
			t.Errorf("platform %d: %+v, want %s with the sha256 of %q", i, p, want.uri, want.body)
		}
		var files []string
		for _, f := range p.Files {
			if f.To != "." {
				t.Errorf("platform %d: files: %s goes to %q", i, f.From, f.To)
			}
			files = append(files, f.From)
		}
		if !slices.Equal(files, want.files) {
			t.Errorf("platform %d: files: %v, want %v", i, files, want.files)
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

	// A template whose platform would not install a file of its archive,
	// or names one the archive lacks, is refused.
	const completion = "    - from: kubectl_complete-flightfeed\n      to: .\n"
	if !strings.Contains(string(src), completion) {
		t.Fatalf("the template has no files: entry %q", completion)
	}
	for what, bad := range map[string]string{
		"without the completion script": strings.ReplaceAll(string(src), completion, ""),
		"with the completion script on windows": strings.ReplaceAll(string(src), "    - from: kubectl-flightfeed.exe\n      to: .\n",
			"    - from: kubectl-flightfeed.exe\n      to: .\n"+completion),
		"without files:": regexp.MustCompile(`(?m)^    files:\n(    - from: .*\n      to: .*\n)+`).ReplaceAllString(string(src), ""),
	} {
		if _, err := renderKrew([]byte(bad), "v1.2.3", dist, []string{"linux/amd64", "windows/arm64"}); err == nil || !strings.Contains(err.Error(), "files:") {
			t.Errorf("a template %s: err = %v, want its files: refused", what, err)
		}
	}
}

// The plugin's archive holds the plugin, on linux and darwin its completion
// script for kubectl (executable, running the plugin's __complete), and the
// LICENSE; the same files make the same bytes.
func TestPluginArchive(t *testing.T) {
	script, err := os.ReadFile("../../cmd/kubectl-flightfeed/" + completionScript)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)\A#!/bin/sh\n(#.*\n)*exec kubectl-flightfeed __complete "\$@"\n\z`).Match(script) {
		t.Errorf("%s does not run kubectl-flightfeed __complete with its arguments:\n%s", completionScript, script)
	}
	bodies := map[string][]byte{"kubectl-flightfeed": []byte("ELF"), "kubectl-flightfeed.exe": []byte("MZ"), completionScript: script, "LICENSE": []byte("Apache")}
	read := func(name string) ([]byte, error) { return bodies[name], nil }
	type entry struct {
		name string
		mode int64
	}
	for goos, want := range map[string][]entry{
		"linux":   {{"kubectl-flightfeed", 0o755}, {completionScript, 0o755}, {"LICENSE", 0o644}},
		"darwin":  {{"kubectl-flightfeed", 0o755}, {completionScript, 0o755}, {"LICENSE", 0o644}},
		"windows": {{"kubectl-flightfeed.exe", 0o755}, {"LICENSE", 0o644}},
	} {
		var a, b bytes.Buffer
		if err := writePluginArchive(&a, goos, read); err != nil {
			t.Fatal(err)
		}
		if err := writePluginArchive(&b, goos, read); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: two archives of the same files differ", goos)
		}
		zr, err := gzip.NewReader(&a)
		if err != nil {
			t.Fatal(err)
		}
		var got []entry
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if h.Typeflag != tar.TypeReg || !bytes.Equal(body, bodies[h.Name]) {
				t.Errorf("%s: %s is not the file given", goos, h.Name)
			}
			got = append(got, entry{h.Name, h.Mode})
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: the archive holds %v, want %v", goos, got, want)
		}
	}
	// A missing file fails the archive instead of leaving it out.
	if err := writePluginArchive(io.Discard, "linux", func(name string) ([]byte, error) {
		if name == completionScript {
			return nil, os.ErrNotExist
		}
		return bodies[name], nil
	}); err == nil || !strings.Contains(err.Error(), completionScript) {
		t.Errorf("an archive without its completion script: err = %v", err)
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
