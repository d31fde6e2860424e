package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The plugin's release archive, the one krew downloads: the plugin, its
// completion script for kubectl and the license. renderKrew holds each
// platform's files: list of the krew manifest to the same names.
const (
	pluginBinary = "kubectl-flightfeed"
	// completionScript is what kubectl (1.26+) runs to complete
	// "kubectl flightfeed …"; it must be on the PATH under this name. krew
	// links only the plugin (bin), so docs/plugin.md and the manifest's
	// caveats say how to put it there.
	completionScript = "kubectl_complete-flightfeed"
	// licenseFile goes into every archive: krew-index asks for it.
	licenseFile = "LICENSE"
)

// pluginFiles are the files of the plugin's archive for goos, in archive
// order; the first is the plugin itself (the manifest's bin). A windows
// archive has no completion script: kubectl there finds only files with an
// executable extension (PATHEXT), which a shell script is not.
func pluginFiles(goos string) []string {
	if goos == "windows" {
		return []string{pluginBinary + ".exe", licenseFile}
	}
	return []string{pluginBinary, completionScript, licenseFile}
}

// pluginArchive is the name of the plugin's archive for a platform (the
// krew template's uris end in it).
func pluginArchive(goos, goarch string) string {
	return pluginBinary + "_" + goos + "_" + goarch + ".tar.gz"
}

// archiveEpoch is every entry's time: the archive of the same files is the
// same bytes.
var archiveEpoch = time.Unix(0, 0).UTC()

func archiveCmd(args []string) error {
	fs := flag.NewFlagSet("archive", flag.ExitOnError)
	goos := fs.String("os", "", "the plugin binary's GOOS")
	goarch := fs.String("arch", "", "the plugin binary's GOARCH")
	binary := fs.String("binary", "", "the plugin binary built for -os and -arch")
	completion := fs.String("completion", "cmd/kubectl-flightfeed/"+completionScript, "the completion script")
	license := fs.String("license", licenseFile, "the license file")
	dist := fs.String("dist", "dist", "the folder the archive and its .sha256 are written to")
	_ = fs.Parse(args)
	if *goos == "" || *goarch == "" || *binary == "" {
		return errors.New("archive: -os, -arch and -binary are required")
	}
	sources := map[string]string{pluginBinary: *binary, pluginBinary + ".exe": *binary, completionScript: *completion, licenseFile: *license}
	var buf bytes.Buffer
	if err := writePluginArchive(&buf, *goos, func(name string) ([]byte, error) {
		return os.ReadFile(sources[name])
	}); err != nil {
		return fmt.Errorf("archive %s/%s: %w", *goos, *goarch, err)
	}
	name := pluginArchive(*goos, *goarch)
	if err := writeFile(filepath.Join(*dist, name), buf.Bytes()); err != nil {
		return err
	}
	sum := sha256.Sum256(buf.Bytes())
	line := hex.EncodeToString(sum[:]) + "  " + name + "\n"
	fmt.Print(line)
	return writeFile(filepath.Join(*dist, name+".sha256"), []byte(line))
}

// writePluginArchive writes the .tar.gz of pluginFiles(goos) to w, each
// read by read, executables mode 0755 and the license 0644, owned by root,
// at archiveEpoch.
func writePluginArchive(w io.Writer, goos string, read func(name string) ([]byte, error)) error {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	for _, name := range pluginFiles(goos) {
		body, err := read(name)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if len(body) == 0 {
			return fmt.Errorf("%s is empty", name)
		}
		if name == completionScript && !strings.HasPrefix(string(body), "#!") {
			return fmt.Errorf("%s is not a script (no #! line)", name)
		}
		mode := int64(0o755)
		if name == licenseFile {
			mode = 0o644
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body)), ModTime: archiveEpoch, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
