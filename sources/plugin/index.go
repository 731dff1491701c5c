package plugin

import (
	"bytes"

	"github.com/loci-dev/loci/sources/pack"
)

// IndexInfo reads a plugin archive (Read's checks) and answers what a
// registry index lists of it (pack.IndexOptions.Plugin): its id,
// version, description and loci requirement, and as its contract the
// highest contract among its source modules, so a reader that cannot run
// one of them passes the version over without downloading it.
func IndexInfo(archive []byte) (pack.IndexPluginInfo, error) {
	p, err := Read(bytes.NewReader(archive))
	if err != nil {
		return pack.IndexPluginInfo{}, err
	}
	m := p.Manifest
	info := pack.IndexPluginInfo{ID: m.ID, Version: m.Version, Description: m.Description, Loci: m.Loci}
	for _, s := range p.Sources {
		info.Contract = max(info.Contract, s.Package.Manifest.Contract)
	}
	return info, nil
}
