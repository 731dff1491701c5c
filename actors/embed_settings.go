package actors

import (
	"slices"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/index/embed"
)

// EmbedSettings converts the configuration's embedding section into the
// embedder's settings (embed.Open): every configured profile by name,
// with its defaults filled in (config.Embedding.ProfileNamed). It is the
// one place the two meet: index/embed never imports the configuration.
func EmbedSettings(e config.Embedding) map[string]embed.Settings {
	out := make(map[string]embed.Settings, len(e.Profiles))
	for name := range e.Profiles {
		p, _ := e.ProfileNamed(name)
		out[name] = embed.Settings{Provider: p.Provider, Format: p.Format, URL: p.URL, Model: p.Model, Dimension: p.Dimension,
			KeyEnv: p.KeyEnv, KeyFile: p.KeyFile, Command: slices.Clone(p.Command), BatchSize: p.BatchSize,
			TimeoutSecs: p.TimeoutSecs, Pipeline: p.Pipeline}
	}
	return out
}
