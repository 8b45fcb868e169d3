package runs

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/apiary-dev/apiary/internal/supervise"
)

// reapLine is one removal in WriteReapJSON's form.
type reapLine struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Run    string `json:"run"`
	DryRun bool   `json:"dry_run"`
	Error  string `json:"error,omitempty"`
}

// WriteReapJSON prints what Reap removed (or would) as an indented JSON
// array: kind, id, run, dry_run and the error, if any.
func WriteReapJSON(w io.Writer, rep supervise.ReapReport) error {
	out := []reapLine{}
	for _, r := range rep.Removed {
		l := reapLine{Kind: string(r.Item.Kind), ID: r.Item.ID, Run: r.Item.Owner, DryRun: r.DryRun}
		if r.Err != nil {
			l.Error = r.Err.Error()
		}
		out = append(out, l)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteReapText prints what Reap removed (or would), one line each — a
// checkout is "brought along", not removed — or "nothing to reap".
func WriteReapText(w io.Writer, rep supervise.ReapReport) error {
	for _, r := range rep.Removed {
		verb := "removed"
		switch {
		case r.DryRun:
			verb = "would remove"
		case r.Err != nil:
			verb = "failed to remove"
		}
		if r.Item.Kind == supervise.KindCheckout {
			verb = map[string]string{"removed": "brought along", "would remove": "would bring along", "failed to remove": "failed to bring along"}[verb]
		}
		suffix := ""
		if r.Err != nil {
			suffix = ": " + r.Err.Error()
		}
		if _, err := fmt.Fprintf(w, "%s %s %s (run %s)%s\n", verb, r.Item.Kind, r.Item.ID, r.Item.Owner, suffix); err != nil {
			return err
		}
	}
	if len(rep.Removed) == 0 {
		_, err := fmt.Fprintln(w, "nothing to reap")
		return err
	}
	return nil
}
