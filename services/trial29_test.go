package services

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/pack"
)

// TestTrial29ConsentNamesWhatIsNew: an update asking for more names the
// permissions it newly asks for, beside all it asks for.
func TestTrial29ConsentNamesWhatIsNew(t *testing.T) {
	ctx := context.Background()
	p, _ := newPackages(t)
	v1 := testPackage(t, "notes", "1.0.0", readPerms, testModule)
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, v1)), InstallOptions{Consent: pack.ConsentDigest("notes", v1.Manifest.Permissions)}); err != nil {
		t.Fatal(err)
	}
	more := testPackage(t, "notes", "2.0.0", readPerms+"network = true\n", testModule)
	_, err := p.Install(ctx, bytes.NewReader(archive(t, more)), InstallOptions{})
	wantCode(t, err, fault.SourceConsentRequired, "it newly asks to: use the network (any address). All it asks to: read the folder")
}

// TestTrial29DowngradeIsSaid: installing an older version over a newer
// one installs it and says it is a downgrade; an upgrade is not one.
func TestTrial29DowngradeIsSaid(t *testing.T) {
	ctx := context.Background()
	p, _ := newPackages(t)
	for _, c := range []struct {
		version, replaced string
		downgrade         bool
	}{{"0.4.0", "", false}, {"0.2.0", "0.4.0", true}, {"0.10.0", "0.2.0", false}} {
		out, err := p.Install(ctx, bytes.NewReader(archive(t, testPackage(t, "notes", c.version, "", testModule))), InstallOptions{})
		if err != nil || out.Replaced != c.replaced || out.Downgrade != c.downgrade || out.Source.Version != c.version {
			t.Fatalf("install %s: %+v %v", c.version, out, err)
		}
	}
}

// TestTrial29ShowSaysWhereTheFilesAre: an installed package shows its
// folder under the palace; a built-in or bundled one none.
func TestTrial29ShowSaysWhereTheFilesAre(t *testing.T) {
	ctx := context.Background()
	p, _ := newPackages(t, testPackage(t, "shipped", "1.0.0", "", testModule))
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, testPackage(t, "notes", "1.0.0", "", testModule))), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	v, err := p.Show(ctx, "notes")
	if err != nil || v.Dir != filepath.Join(p.Dir, "notes") {
		t.Fatalf("show: %+v %v", v, err)
	}
	if _, err := os.Stat(filepath.Join(v.Dir, pack.ManifestFile)); err != nil {
		t.Fatalf("the folder shown holds no manifest: %v", err)
	}
	for _, name := range []string{"shipped", "directory"} {
		if v, _ := p.Show(ctx, name); v.Dir != "" {
			t.Fatalf("%s shows the folder %q", name, v.Dir)
		}
	}
}

// TestTrial29RemoveNamesTheMinersLeftWithout: a removal answers the
// miners naming the source (directly or through a source
// configuration), and the log warns of them.
func TestTrial29RemoveNamesTheMinersLeftWithout(t *testing.T) {
	ctx := context.Background()
	p, _ := newPackages(t)
	var logb syncBuffer
	p.Log = slog.New(slog.NewTextHandler(&logb, nil))
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, testPackage(t, "mysrc", "1.0.0", "", testModule))), InstallOptions{Enable: true}); err != nil {
		t.Fatal(err)
	}
	m := &Miners{Sources: p.Registry,
		Defined: map[string]config.Miner{"direct": {Source: "mysrc"}, "viaconf": {Source: "conf"}, "other": {Source: "directory"}, "dflt": {}},
		Configs: map[string]config.SourceConfig{"conf": {Source: "mysrc"}}}
	p.MinersUsing = m.UsingSource
	out, err := p.RemoveSource(ctx, "mysrc")
	if err != nil || out.Removed != "mysrc" || strings.Join(out.Miners, ",") != "direct,viaconf" {
		t.Fatalf("remove: %+v %v", out, err)
	}
	if !strings.Contains(logb.String(), "miners=\"direct, viaconf\"") {
		t.Fatalf("the log does not name the miners:\n%s", logb.String())
	}
	if out, err := p.RemoveSource(ctx, "mysrc"); fault.As(err).Code != fault.SourceNotFound {
		t.Fatalf("a second removal: %+v %v", out, err)
	}
}

// TestTrial29UnavailableIsLoggedOncePerChange: a tampered module is
// warned of, naming the package and why, once however often the
// packages are read; its repair is noted; tampering again warns again.
func TestTrial29UnavailableIsLoggedOncePerChange(t *testing.T) {
	ctx := context.Background()
	p, _ := newPackages(t)
	var logb syncBuffer
	p.Log = slog.New(slog.NewTextHandler(&logb, nil))
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, testPackage(t, "notes", "1.0.0", "", testModule))), InstallOptions{Enable: true}); err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(p.Dir, "notes", "notes.wasm")
	count := func() int { return strings.Count(logb.String(), "a source package cannot run") }
	tamper := func(b []byte) {
		if err := os.WriteFile(mod, b, 0o600); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := p.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	tamper(append(append([]byte{}, testModule...), 9))
	if count() != 1 || !strings.Contains(logb.String(), "source=notes") || !strings.Contains(logb.String(), "the module changed on disk") {
		t.Fatalf("after a tamper and three reads, %d warnings:\n%s", count(), logb.String())
	}
	tamper(testModule)
	if count() != 1 || !strings.Contains(logb.String(), "a source package can run again") {
		t.Fatalf("after the repair:\n%s", logb.String())
	}
	tamper(append(append([]byte{}, testModule...), 7))
	if count() != 2 {
		t.Fatalf("a second tamper: %d warnings:\n%s", count(), logb.String())
	}

	// At start: a daemon starting over a tampered package warns at once.
	var startLog syncBuffer
	q := &Packages{DB: p.DB, Registry: sources.NewRegistry(sources.Directory{}), Dir: p.Dir, Version: p.Version, NewAdapter: p.NewAdapter,
		Log: slog.New(slog.NewTextHandler(&startLog, nil))}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(startLog.String(), "a source package cannot run") || !strings.Contains(startLog.String(), "source=notes") {
		t.Fatalf("start over a tampered package:\n%s", startLog.String())
	}
}

// TestTrial29MinerOfADisabledSourceSaysEnableIt: a miner whose source is
// disabled or installed but not enabled says to enable the source (loci
// source enable NAME), not to correct the miner; the reason reads "the
// notes source is disabled".
func TestTrial29MinerOfADisabledSourceSaysEnableIt(t *testing.T) {
	ctx := context.Background()
	p, _ := newPackages(t)
	if _, err := p.Install(ctx, bytes.NewReader(archive(t, testPackage(t, "notes", "1.0.0", "", testModule))), InstallOptions{}); err != nil {
		t.Fatal(err)
	}
	m := &Miners{Sources: p.Registry, Defined: map[string]config.Miner{"m": {Source: "notes", Locator: t.TempDir(), Enabled: true}}}
	for _, c := range []struct {
		enable *bool
		reason string
	}{{nil, "the notes source is installed but not enabled"}, {ptr(false), "the notes source is disabled"}} {
		if c.enable != nil {
			if _, err := p.SetEnabled(ctx, "notes", *c.enable); err != nil {
				t.Fatal(err)
			}
		}
		_, err := m.Run(ctx, "m", MinerRun{})
		wantCode(t, err, fault.MinerNotRunnable, c.reason, "loci source enable notes")
		if fe := fault.As(err); strings.Contains(fe.Help, "correct the miner") || strings.Contains(fe.Msg, "not enabled") && c.enable != nil {
			t.Fatalf("%v (help %q)", fe.Msg, fe.Help)
		}
		_, err = p.Registry.Adapter("notes")
		wantCode(t, err, fault.SourceNotEnabled, c.reason, "loci source enable notes")
	}
	// A miner that is itself wrong still says to correct it.
	m.Defined["bad"] = config.Miner{Source: "nothing", Locator: t.TempDir(), Enabled: true}
	_, err := m.Run(ctx, "bad", MinerRun{})
	wantCode(t, err, fault.MinerNotRunnable, "correct the miner")
}

// syncBuffer is a buffer a logger may write from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
