package plan

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/apiary-dev/apiary/internal/strictyaml"
)

// LoadAgents reads an agents file: a YAML (or JSON) mapping of profile name
// to profile, as under a plan's agents:, read strictly. check, if set,
// vets each profile in name order; its error is located at the profile's
// name in the file. An empty path is no profiles.
func LoadAgents(path string, check func(name string, a Agent) error) (map[string]Agent, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := strictyaml.ParseAuto(path, b, strictyaml.Options{MaxBytes: 1 << 20})
	if err != nil {
		return nil, err
	}
	var raw map[string]Agent
	if err := doc.Decode(&raw); err != nil {
		return nil, err
	}
	if check == nil {
		return raw, nil
	}
	for _, n := range slices.Sorted(maps.Keys(raw)) {
		if err := check(n, raw[n]); err != nil {
			at := doc.Pos(strictyaml.Path{n})
			return nil, fmt.Errorf("%s:%d:%d: %w", path, at.Line, at.Column, err)
		}
	}
	return raw, nil
}
