// Command image writes a one-layer OCI image of a static binary as an OCI
// archive (an OCI image layout in a tar file), without a Docker engine:
// `make image` packs bin/flightfeed into the equivalent of the Dockerfile's
// distroless image, and hack/cluster packs the sandbox's pause binary. The
// output is reproducible: fixed timestamps and ownership, sorted entries.
//
// The layer holds the binary, /etc/passwd and /etc/group (root, nobody and
// nonroot 65532 — the users of distroless), /home/nonroot, /tmp and, with
// -ca, the CA bundle at /etc/ssl/certs/ca-certificates.crt. No shell, no
// package manager. The archive's index names the image for containerd
// (io.containerd.image.name), so `ctr images import` tags it.
//
//	go run ./hack/image -binary bin/linux/flightfeed -name flightfeed -tag auto \
//	    -ca /etc/ssl/certs/ca-certificates.crt -user 65532:65532 -cmd manager \
//	    -ports 8080,8081,8082 -out bin/flightfeed-image.tar
//
// Prints the image's full reference on stdout.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"
)

const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// epoch is every file's and the image's timestamp, for reproducible output.
var epoch = time.Unix(0, 0).UTC()

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type options struct {
	binary, inImage, name, tag, ca, user, out string
	cmd, ports, labels                        []string
}

func main() {
	var o options
	var cmd, ports, labels string
	flag.StringVar(&o.binary, "binary", "", "static binary to pack (required)")
	flag.StringVar(&o.inImage, "path", "", "its path in the image (default /<base name of -binary>)")
	flag.StringVar(&o.name, "name", "", "image name, e.g. flightfeed or registry.k8s.io/pause (required)")
	flag.StringVar(&o.tag, "tag", "latest", `tag; "auto" derives dev-<12 hex digits> from the image's content`)
	flag.StringVar(&o.ca, "ca", "", "CA bundle to install as /etc/ssl/certs/ca-certificates.crt")
	flag.StringVar(&o.user, "user", "", "user:group the entrypoint runs as")
	flag.StringVar(&cmd, "cmd", "", "default arguments, comma-separated")
	flag.StringVar(&ports, "ports", "", "exposed TCP ports, comma-separated")
	flag.StringVar(&labels, "labels", "", "image labels key=value, comma-separated")
	flag.StringVar(&o.out, "out", "", "OCI archive to write (required)")
	flag.Parse()
	o.cmd, o.ports, o.labels = split(cmd), split(ports), split(labels)
	if o.binary == "" || o.name == "" || o.out == "" {
		fmt.Fprintln(os.Stderr, "image: -binary, -name and -out are required")
		flag.Usage()
		os.Exit(2)
	}
	if o.inImage == "" {
		o.inImage = "/" + path.Base(o.binary)
	}
	ref, err := build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Println(ref)
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

type file struct {
	name string
	mode int64
	uid  int
	dir  bool
	body []byte
}

func build(o options) (string, error) {
	bin, err := os.ReadFile(o.binary)
	if err != nil {
		return "", err
	}
	files := []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: 65532, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	if o.ca != "" {
		ca, err := os.ReadFile(o.ca)
		if err != nil {
			return "", err
		}
		files = append(files,
			file{name: "etc/ssl/", mode: 0o755, dir: true},
			file{name: "etc/ssl/certs/", mode: 0o755, dir: true},
			file{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: ca})
	}
	inImage := strings.TrimPrefix(path.Clean(o.inImage), "/")
	for d := path.Dir(inImage); d != "."; d = path.Dir(d) {
		files = append(files, file{name: d + "/", mode: 0o755, dir: true})
	}
	files = append(files, file{name: inImage, mode: 0o755, body: bin})
	files = dedupe(files)

	layerTar, err := tarball(files)
	if err != nil {
		return "", err
	}
	diffID := digest(layerTar)
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		return "", err
	}
	if _, err := zw.Write(layerTar); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	layer := gz.Bytes()

	imgConfig := map[string]any{
		"Entrypoint": []string{"/" + inImage},
		"Env": []string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		},
		"WorkingDir": "/",
	}
	if o.ca != "" {
		imgConfig["Env"] = append(imgConfig["Env"].([]string), "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt")
	}
	if o.user != "" {
		imgConfig["User"] = o.user
	}
	if len(o.cmd) > 0 {
		imgConfig["Cmd"] = o.cmd
	}
	if len(o.ports) > 0 {
		exposed := map[string]struct{}{}
		for _, p := range o.ports {
			exposed[p+"/tcp"] = struct{}{}
		}
		imgConfig["ExposedPorts"] = exposed
	}
	if len(o.labels) > 0 {
		l := map[string]string{}
		for _, kv := range o.labels {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = v
		}
		imgConfig["Labels"] = l
	}
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config":       imgConfig,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		"history":      []map[string]string{{"created": epoch.Format(time.RFC3339), "created_by": "hack/image " + path.Base(o.binary)}},
	})
	if err != nil {
		return "", err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaManifest,
		"config":        descriptor{MediaType: mediaConfig, Digest: digest(config), Size: int64(len(config))},
		"layers":        []descriptor{{MediaType: mediaLayer, Digest: digest(layer), Size: int64(len(layer))}},
	})
	if err != nil {
		return "", err
	}

	tag := o.tag
	if tag == "auto" {
		tag = "dev-" + strings.TrimPrefix(digest(config), "sha256:")[:12]
	}
	ref := normalize(o.name) + ":" + tag
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaIndex,
		"manifests": []descriptor{{
			MediaType: mediaManifest, Digest: digest(manifest), Size: int64(len(manifest)),
			Annotations: map[string]string{
				"io.containerd.image.name":          ref,
				"org.opencontainers.image.ref.name": tag,
			},
			Platform: &platform{Architecture: runtime.GOARCH, OS: "linux"},
		}},
	})
	if err != nil {
		return "", err
	}

	blob := func(b []byte) file {
		return file{name: "blobs/sha256/" + strings.TrimPrefix(digest(b), "sha256:"), mode: 0o644, body: b}
	}
	archive, err := tarball([]file{
		{name: "blobs/", mode: 0o755, dir: true},
		{name: "blobs/sha256/", mode: 0o755, dir: true},
		blob(config), blob(layer), blob(manifest),
		{name: "index.json", mode: 0o644, body: index},
		{name: "oci-layout", mode: 0o644, body: []byte(`{"imageLayoutVersion":"1.0.0"}`)},
	})
	if err != nil {
		return "", err
	}
	tmp := o.out + ".tmp"
	if err := os.WriteFile(tmp, archive, 0o644); err != nil { //nolint:gosec // an image archive is not secret
		return "", err
	}
	return ref, os.Rename(tmp, o.out)
}

// normalize spells a short name the way containerd's CRI looks it up.
func normalize(name string) string {
	first, _, found := strings.Cut(name, "/")
	if !found {
		return "docker.io/library/" + name
	}
	if !strings.ContainsAny(first, ".:") && first != "localhost" {
		return "docker.io/" + name
	}
	return name
}

// dedupe drops repeated directories, keeping the first, and sorts by name.
func dedupe(files []file) []file {
	seen := map[string]bool{}
	var out []file
	for _, f := range files {
		if seen[f.name] {
			continue
		}
		seen[f.name] = true
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func tarball(files []file) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: epoch,
			Typeflag: tar.TypeReg, Size: int64(len(f.body)), Format: tar.FormatPAX,
		}
		if f.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
