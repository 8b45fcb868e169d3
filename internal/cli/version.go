package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
)

// buildVersion describes the running binary from its embedded build info.
type buildVersion struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

func readBuildVersion() buildVersion {
	v := buildVersion{Module: "github.com/apiary-dev/apiary", Version: "(unknown)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (v buildVersion) String() string {
	s := fmt.Sprintf("apiary %s", v.Version)
	if v.Revision != "" {
		s += " commit " + v.Revision
		if v.Modified {
			s += " (modified)"
		}
		if v.Time != "" {
			s += " " + v.Time
		}
	} else {
		s += " (no commit: built outside a git checkout or with -buildvcs=false)"
	}
	return s + " " + v.Go
}

func versionCommand() *command {
	return &command{
		Name:    "version",
		Summary: "print apiary's version, commit and Go version",
		Examples: []string{
			"apiary version",
			"apiary version --json",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			asJSON := fs.Bool("json", false, "print the version as a JSON object")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				v := readBuildVersion()
				if *asJSON {
					return writeJSON(e.Stdout, v)
				}
				_, err := fmt.Fprintln(e.Stdout, v)
				return err
			}
		},
	}
}
