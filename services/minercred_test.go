package services

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services/kinds"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/secret"
	"github.com/loci-dev/loci/store"
)

// A miner's run hands its mine job the credential's reference (the
// variable's name), never its value: the job's stored input names the
// reference, and the value is nowhere in it (the kind reads it when it
// runs: services/kinds' TestMineHandsTheSourceTheCredentialAndKeepsItNowhere).
func TestMinerRunPassesTheCredentialsReference(t *testing.T) {
	const value = "s3cr3t-value-of-the-miner"
	t.Setenv("LOCI_TEST_MINER_KEY", value)
	j := newJobs(t, testCfg)
	reg := sources.NewRegistry(sources.Directory{MaxFileBytes: 1 << 20})
	j.Register(kinds.All(j, kinds.Settings{Dedup: store.Dedup{Enabled: true, Threshold: 0.9},
		Mining: kinds.Mining{Sources: reg, ChunkChars: 200, Secrets: secret.Redact}})...)
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Stop(context.Background()) })
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/note.md", []byte("a note about the proxy"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &Miners{Sources: reg, Jobs: j, Defined: map[string]config.Miner{
		"docs": {Locator: dir, Wing: "w", Enabled: true, Credential: &config.CredentialRef{Env: "LOCI_TEST_MINER_KEY"}},
	}}
	job, err := m.Run(context.Background(), "docs", MinerRun{Channel: store.ByHTTP})
	if err != nil {
		t.Fatal(err)
	}
	input := string(job.Input)
	if !strings.Contains(input, "LOCI_TEST_MINER_KEY") || strings.Contains(input, value) {
		t.Fatalf("the job's input: %s", input)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got, err := j.Get(context.Background(), job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Terminal() || got.Status == store.JobFailed {
			if got.Status != store.JobCompleted || strings.Contains(string(got.Input), value) || strings.Contains(string(got.Result), value) {
				t.Fatalf("the job: %s %s %s", got.Status, got.Input, got.Result)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not end: %s", got.Status)
		}
	}
	// A source that needs a credential: a miner whose credential is not
	// set is refused before anything is queued.
	if _, err := reg.Put(sources.Entry{Adapter: keyedSource{}, State: sources.StateEnabled, Origin: sources.OriginLocal}); err != nil {
		t.Fatal(err)
	}
	m.Defined["keyed"] = config.Miner{Source: "keyed", Locator: "inbox", Wing: "w", Enabled: true, Credential: &config.CredentialRef{Env: "LOCI_TEST_MINER_KEY"}}
	t.Setenv("LOCI_TEST_MINER_KEY", "")
	if job, err := m.Run(context.Background(), "keyed", MinerRun{Channel: store.ByHTTP}); !fault.Is(err, fault.MinerNotRunnable) {
		t.Fatalf("a miner whose credential is not set: %+v %v", job, err)
	}
}

// keyedSource is a source that needs a credential (it reads nothing).
type keyedSource struct{}

func (keyedSource) Info() sources.Info {
	return sources.Info{Name: "keyed", Capabilities: sources.Capabilities{NeedsCredentials: true}}
}

func (keyedSource) Resolve(loc string, _ map[string]string) (store.SourceIdentity, error) {
	return store.SourceIdentity{Adapter: "keyed", Locator: loc}, nil
}

func (keyedSource) ParseCursor(json.RawMessage) error { return nil }

func (keyedSource) Discover(context.Context, sources.Run, json.RawMessage) ([]sources.Ref, error) {
	return nil, nil
}

func (keyedSource) Read(context.Context, sources.Run, sources.Ref) (*sources.Document, error) {
	return nil, nil
}
