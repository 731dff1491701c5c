package services

import (
	"context"
	"reflect"
	"sort"
	"strings"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/triggers"
)

// TriggersReloaded is what a reload changed, by trigger name.
type TriggersReloaded struct {
	Added, Removed, Changed []string
}

// Reload reads the configuration file again now; an unusable file is
// loci::miner::config_file and the triggers stay as they were.
func (t *Triggers) Reload(ctx context.Context) (TriggersReloaded, error) {
	var r TriggersReloaded
	before, _, _ := t.Snapshot()
	if err := t.Sync(ctx); err != nil {
		return r, err
	}
	after, _, lastErr := t.Snapshot()
	if lastErr != "" {
		return r, fault.New(fault.MinerConfigFile, "the configuration file cannot be used: "+lastErr,
			"correct the file and reload again; the triggers stay as they were")
	}
	for name, d := range after {
		p, ok := before[name]
		switch {
		case !ok:
			r.Added = append(r.Added, name)
		case !reflect.DeepEqual(p, d):
			r.Changed = append(r.Changed, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			r.Removed = append(r.Removed, name)
		}
	}
	for _, l := range []*[]string{&r.Added, &r.Removed, &r.Changed} {
		sort.Strings(*l)
	}
	return r, nil
}

// SetEnabled enables or disables a trigger in the configuration file (its
// enabled line), then brings the supervisor to it. Both are idempotent;
// enabling checks every prerequisite first and changes nothing unless all
// hold (loci::trigger::not_activatable, listing what is missing).
func (t *Triggers) SetEnabled(ctx context.Context, name string, on bool) (TriggerInfo, error) {
	in, err := t.Get(ctx, name)
	if err != nil {
		return in, err
	}
	if in.Trigger.Enabled == on {
		return in, nil
	}
	if on && len(in.Setup) > 0 {
		return in, notActivatable(name, in.Setup)
	}
	if _, err := t.edit(ctx, func(file string) error { return config.SetTriggerEnabled(file, name, on) }); err != nil {
		return in, err
	}
	return t.Get(ctx, name)
}

func notActivatable(name string, setup []string) error {
	return fault.Newf(fault.TriggerNotActivatable, "provide what it needs, then enable it again (GET /api/triggers/"+name+", loci trigger get "+name+", lists it as setup)",
		"trigger %q cannot be enabled yet: it needs %s", name, strings.Join(setup, "; "))
}

// TriggerChange is a PUT of a trigger: the fields named change (nil:
// kept), settings are merged key by key, UnsetSettings and Unset
// (credential) remove what they name.
type TriggerChange struct {
	Miner         *string
	Type          *string
	Enabled       *bool
	Credential    *config.CredentialRef
	Settings      map[string]string
	UnsetSettings []string
	Unset         []string
}

// Put creates a trigger (disabled unless Enabled says otherwise) or
// changes the fields named, in its table of the configuration file
// (created when the daemon read none), then brings the supervisor to it.
// A bad field is loci::trigger::invalid naming it, a credential file
// outside credentials.dir included; enabling one whose prerequisites do
// not hold is loci::trigger::not_activatable.
func (t *Triggers) Put(ctx context.Context, name string, c TriggerChange) (info TriggerInfo, saved Saved, err error) {
	bad := func(key, problem, help string) error { return fault.New(fault.TriggerInvalid, key+": "+problem, help) }
	if p := triggers.Name(name); p != "" {
		return info, saved, bad("name", "the trigger name "+p, "name triggers with lowercase letters, digits, - and _")
	}
	defined, file, _ := t.Snapshot()
	saved.File = file
	prev, exists := defined[name]
	next := prev
	settings := prev.SettingStrings()
	for k, v := range c.Settings {
		settings[k] = v
	}
	for _, k := range c.UnsetSettings {
		delete(settings, k)
	}
	if c.Miner != nil {
		next.Miner = *c.Miner
	}
	if c.Type != nil {
		next.Type = *c.Type
	}
	if c.Enabled != nil {
		next.Enabled = *c.Enabled
	}
	if c.Credential != nil {
		next.Credential = c.Credential
	}
	for _, f := range c.Unset {
		if f != "credential" {
			return info, saved, bad("unset", "\""+f+"\" is not a field that can be unset", "unset takes credential (settings are removed with unset_settings)")
		}
		next.Credential = nil
	}
	if p := config.MinerName(next.Miner); p != "" {
		return info, saved, bad("miner", "the miner name "+p, "name the miner the trigger runs")
	}
	if next.Type == "" {
		return info, saved, bad("type", "is required: schedule, poll, watch or webhook", "give the trigger a type")
	}
	if k := secretSetting(settings); k != "" {
		return info, saved, bad("settings."+k, "reads like a secret, and settings are stored in plain text",
			"keep the secret in an environment variable or a file and name it in the trigger's credential")
	}
	set, err := triggers.Check(next.Type, settings)
	if err != nil {
		return info, saved, err
	}
	if k := next.Credential.Kind(); next.Credential != nil && k != "env" && k != "file" || next.Credential != nil && next.Credential.Env != "" && next.Credential.File != "" {
		return info, saved, bad("credential", "names where the webhook's shared secret is read: exactly one of env or file", "correct the credential")
	}
	if next.Credential != nil && set.Type != triggers.Webhook {
		return info, saved, bad("credential", "only a webhook trigger takes a credential", "unset it")
	}
	if err := t.Miners.checkCredentialFile(fault.TriggerInvalid, c.Credential); err != nil {
		return info, saved, err
	}
	next.Settings = nil
	if len(settings) > 0 {
		next.Settings = map[string]any{}
		for k, v := range settings {
			if k == "recursive" {
				next.Settings[k] = set.Recursive
				continue
			}
			next.Settings[k] = v
		}
	}
	if next.Enabled && (!exists || !prev.Enabled) {
		if need := t.setup(next); len(need) > 0 {
			return info, saved, notActivatable(name, need)
		}
	}
	saved.Created = !exists
	saved.Changed = saved.Created || !reflect.DeepEqual(prev, next)
	if saved.Changed {
		w, err := t.edit(ctx, func(file string) error { return config.PutTriggerTable(file, name, next) })
		saved.File, saved.FileCreated = w.File, w.Created
		if err != nil {
			return info, saved, err
		}
	}
	info, err = t.Get(ctx, name)
	return info, saved, err
}

// Delete removes a trigger's table from the configuration file; the
// supervisor stops it and forgets what the palace remembered about it.
func (t *Triggers) Delete(ctx context.Context, name string) error {
	if _, err := t.Get(ctx, name); err != nil {
		return err
	}
	_, err := t.edit(ctx, func(file string) error { return config.DeleteTriggerTable(file, name) })
	return err
}

// edit changes the configuration file (Miners.write: one change at a
// time, the file created when the daemon read none), then syncs.
func (t *Triggers) edit(ctx context.Context, fn func(file string) error) (FileWrite, error) {
	return t.Miners.write(fn, func() error {
		if err := t.Sync(ctx); err != nil {
			return err
		}
		if _, _, lastErr := t.Snapshot(); lastErr != "" {
			return fault.New(fault.MinerConfigFile, "the configuration file cannot be used after the change: "+lastErr, "correct the file by hand")
		}
		return nil
	})
}

// secretSetting is the first setting that reads like a secret ("" when
// none does).
func secretSetting(settings map[string]string) string {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if sources.LooksSecret(k, settings[k]) {
			return k
		}
	}
	return ""
}
