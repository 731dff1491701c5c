// Command locidist builds loci's release artefacts into a folder (make
// dist): static .tar.gz archives for linux/amd64, linux/arm64, darwin/amd64
// and darwin/arm64, a .deb and an .rpm for each Linux architecture, and
// SHA256SUMS over them all.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/loci-dev/loci/packaging"
)

// platforms are the release platforms, os/arch.
const platforms = "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64"

func main() {
	out := flag.String("out", "dist", "output folder (emptied of earlier artefacts)")
	version := flag.String("version", "", "version to stamp (default: git describe --tags --always --dirty)")
	commit := flag.String("commit", "", "commit to stamp (default: git rev-parse --short HEAD)")
	only := flag.String("platforms", platforms, "comma-separated os/arch list to build")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *out, *version, *commit, strings.Split(*only, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "locidist:", err)
		os.Exit(1)
	}
}

func git(args ...string) string {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func run(ctx context.Context, out, version, commit string, targets []string) error {
	repo, err := os.Getwd()
	if err != nil {
		return err
	}
	if version == "" {
		version = git("describe", "--tags", "--always", "--dirty")
	}
	if version == "" {
		version = "dev"
	}
	if commit == "" {
		commit = git("rev-parse", "--short", "HEAD")
	}
	// Every file's time is the commit's (or SOURCE_DATE_EPOCH): the same
	// commit gives the same archives.
	mtime := time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			mtime = time.Unix(n, 0).UTC()
		}
	} else if n, err := strconv.ParseInt(git("log", "-1", "--format=%ct"), 10, 64); err == nil {
		mtime = time.Unix(n, 0).UTC()
	}
	b := packaging.Build{Repo: repo, Version: version, Commit: commit, MTime: mtime}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	binDir := filepath.Join(out, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	docs, err := b.Generate()
	if err != nil {
		return err
	}
	var made []string
	write := func(name string, data []byte) error {
		made = append(made, name)
		fmt.Println(filepath.Join(out, name))
		return os.WriteFile(filepath.Join(out, name), data, 0o644)
	}
	for _, t := range targets {
		goos, goarch, ok := strings.Cut(t, "/")
		if !ok || goos == "" || goarch == "" {
			return fmt.Errorf("-platforms: %q is not os/arch", t)
		}
		bin := filepath.Join(binDir, "loci_"+goos+"_"+goarch)
		if err := b.Binary(ctx, goos, goarch, bin); err != nil {
			return err
		}
		binary, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := b.Archive(goos, goarch, binary, docs, &buf); err != nil {
			return err
		}
		if err := write(b.ArchiveName(goos, goarch)+".tar.gz", buf.Bytes()); err != nil {
			return err
		}
		if goos != "linux" {
			continue
		}
		for _, format := range []string{"deb", "rpm"} {
			buf.Reset()
			name, err := b.Package(format, goarch, binary, docs, &buf)
			if err != nil {
				return err
			}
			if err := write(name, buf.Bytes()); err != nil {
				return err
			}
		}
	}
	if err := os.RemoveAll(binDir); err != nil {
		return err
	}
	sort.Strings(made)
	var sums strings.Builder
	for _, name := range made {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			return err
		}
		fmt.Fprintf(&sums, "%x  %s\n", sha256.Sum256(data), name)
	}
	return write("SHA256SUMS", []byte(sums.String()))
}
