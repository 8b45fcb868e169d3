package cli

import (
	"flag"
	"os"
	"slices"

	"github.com/apiary-dev/apiary/internal/config"
	"github.com/apiary-dev/apiary/internal/swarm"
)

// mergeFlags are the merge role's policy flags, shared by `apiary run
// --mode swarm` (the run's policy) and `apiary worker --merge` (the
// policy this host applies while it holds the role). Flags win over
// apiary.yaml's swarm.merge section, which wins over the plan's merge:
// section.
type mergeFlags struct {
	fs         *flag.FlagSet
	configFile string
	onExact    string
	onNear     string
	nearDup    float64
	hotTouches int
	noSplit    bool
}

func addMergeFlags(fs *flag.FlagSet, f *mergeFlags, prefix string) {
	f.fs = fs
	fs.StringVar(&f.configFile, "config", "", prefix+"apiary.yaml `FILE` whose swarm.merge section sets the merge policy (default: ./apiary.yaml when it exists)")
	fs.StringVar(&f.onExact, "on-exact", "", prefix+"what the merge role does with an exact duplicate of a function: `POLICY` warn, reject or reuse (default warn)")
	fs.StringVar(&f.onNear, "on-near", "", prefix+"what the merge role does with a near duplicate: `POLICY` warn, reject or reuse (default warn)")
	fs.Float64Var(&f.nearDup, "near-dup", 0, prefix+"similarity `RATIO` in (0, 1] at which a function is a near duplicate (default 0.85)")
	fs.IntVar(&f.hotTouches, "hot-touches", 0, prefix+"`N` tasks writing one file make it hot and add a task that splits it (default 3)")
	fs.BoolVar(&f.noSplit, "no-split", false, prefix+"never add split tasks for hot files")
}

// set lists the merge flags given on the command line.
func (f *mergeFlags) set() []string {
	var out []string
	f.fs.Visit(func(fl *flag.Flag) {
		if slices.Contains([]string{"config", "on-exact", "on-near", "near-dup", "hot-touches", "no-split"}, fl.Name) {
			out = append(out, "--"+fl.Name)
		}
	})
	return out
}

// options reads apiary.yaml (--config, else ./apiary.yaml when it exists)
// and puts the flags over its swarm.merge section.
func (f *mergeFlags) options() (swarm.MergeOptions, error) {
	file, err := loadApiaryYAML(f.configFile)
	if err != nil {
		return swarm.MergeOptions{}, err
	}
	m := file.Swarm.Merge
	for _, p := range []struct {
		flag string
		val  string
		dst  *string
	}{{"--on-exact", f.onExact, &m.OnExact}, {"--on-near", f.onNear, &m.OnNear}} {
		if p.val == "" {
			continue
		}
		if !slices.Contains(config.DupPolicies, p.val) {
			return swarm.MergeOptions{}, usagef("%s %q: want one of warn, reject, reuse", p.flag, p.val)
		}
		*p.dst = p.val
	}
	if f.nearDup != 0 {
		if f.nearDup < 0 || f.nearDup > 1 {
			return swarm.MergeOptions{}, usagef("--near-dup %g: want a ratio in (0, 1]", f.nearDup)
		}
		m.NearDup = f.nearDup
	}
	if f.hotTouches != 0 {
		if f.hotTouches < 0 {
			return swarm.MergeOptions{}, usagef("--hot-touches %d: must not be negative", f.hotTouches)
		}
		m.HotTouches = f.hotTouches
	}
	opts := swarm.MergeOptions{OnExact: swarm.DupPolicy(m.OnExact), OnNear: swarm.DupPolicy(m.OnNear), NearDup: m.NearDup,
		HotTouches: m.HotTouches, NoSplit: m.NoSplit || f.noSplit}
	// The swarm package's own check, after the flags' and the file's.
	if err := opts.Validate(); err != nil {
		return swarm.MergeOptions{}, err
	}
	return opts, nil
}

// loadApiaryYAML reads apiary.yaml: path when given, else ./apiary.yaml
// when it exists, else the defaults.
func loadApiaryYAML(path string) (*config.Config, error) {
	if path == "" {
		if _, err := os.Stat("apiary.yaml"); err != nil {
			return config.Parse("", nil)
		}
		path = "apiary.yaml"
	}
	return config.LoadFile(path)
}
