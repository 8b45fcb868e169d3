package durable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// DefaultHandoffPath is where rw.handoff_write and rw.handoff_read look by
// default.
const DefaultHandoffPath = "HANDOFF.md"

var handoffRequired = []string{"task_id", "status", "agent", "summary", "next_steps", "last_good_state"}

var handoffStatuses = []string{"blocked", "complete", "handed_off", "partial"}

// validateHandoff checks the required fields of an envelope given as a
// lookup function.
func validateHandoff(get func(string) (any, bool)) error {
	var missing []string
	for _, f := range handoffRequired {
		if _, ok := get(f); !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return encodingErr("", map[string]any{"missing_fields": missing})
	}
	status, _ := get("status")
	if s, ok := status.(string); !ok || !slices.Contains(handoffStatuses, s) {
		return encodingErr("", map[string]any{"status": status, "valid": handoffStatuses})
	}
	for _, f := range []string{"next_steps", "last_good_state"} {
		v, _ := get(f)
		if _, ok := v.([]any); !ok {
			return encodingErr("must_be_list", map[string]any{"field": f})
		}
	}
	lgs, _ := get("last_good_state")
	for i, e := range lgs.([]any) {
		if !hasKeys(e, "path", "sha256") {
			return encodingErr("each_entry_needs_path_and_sha256", map[string]any{"field": "last_good_state", "index": i})
		}
	}
	return nil
}

// hasKeys reports whether v is an object holding every key.
func hasKeys(v any, keys ...string) bool {
	var get func(string) (any, bool)
	switch t := v.(type) {
	case orderedObject:
		get = t.get
	case map[string]any:
		get = func(k string) (any, bool) { x, ok := t[k]; return x, ok }
	default:
		return false
	}
	for _, k := range keys {
		if _, ok := get(k); !ok {
			return false
		}
	}
	return true
}

// HandoffWriteParams are rw.handoff_write's arguments.
type HandoffWriteParams struct {
	Envelope []byte // the JSON object, key order kept in the front matter
	Body     string
	Path     string // default HANDOFF.md
	Archive  bool
}

// HandoffWrite validates a task-continuity envelope, fills in updated_at
// (the caller's object is not modified), optionally archives the previous
// file under <state>/handoffs/, writes "---\n<YAML>\n---\n\n<body>"
// transactionally, and reports drift of last_good_state and the available
// checkpoints.
func (w *Workspace) HandoffWrite(ctx context.Context, p HandoffWriteParams) (Result, error) {
	const tool = "rw.handoff_write"
	if err := w.allow(tool, ""); err != nil {
		return nil, err
	}
	v, err := decodeOrdered(p.Envelope)
	if err != nil {
		return nil, encodingErr("envelope_not_json: "+err.Error(), nil)
	}
	env, ok := v.(orderedObject)
	if !ok {
		return nil, encodingErr("envelope_must_be_object", nil)
	}
	if err := validateHandoff(env.get); err != nil {
		return nil, err
	}
	env = slices.Clone(env)
	if _, ok := env.get("updated_at"); !ok {
		env = append(env, member{"updated_at", isoSeconds(w.nowUTC())})
	}
	hp := p.Path
	if hp == "" {
		hp = DefaultHandoffPath
	}
	t, err := w.resolve(hp)
	if err != nil {
		return nil, err
	}
	if err := w.allow(tool, t.disp); err != nil {
		return nil, err
	}
	front, err := renderYAML(env)
	if err != nil {
		return nil, encodingErr("envelope_not_yaml_encodable: "+err.Error(), nil)
	}
	text := "---\n" + front + "\n---\n"
	if p.Body != "" {
		text += "\n" + strings.TrimRightFunc(p.Body, unicode.IsSpace) + "\n"
	}
	h, err := w.lockPath(ctx, t)
	if err != nil {
		return nil, err
	}
	old, exists, err := w.readExisting(t)
	if err == nil && exists && p.Archive {
		taskID, _ := env.get("task_id")
		err = w.archiveHandoff(ctx, fmt.Sprint(taskID), old)
	}
	var wr writeResult
	if err == nil {
		mode := ModeCreate
		if exists {
			mode = ModeOverwrite
		}
		wr, err = w.writeUserLocked(ctx, h, t, []byte(text), mode, !exists)
	}
	h.unlock()
	if err != nil {
		return nil, err
	}
	lgs, _ := env.get("last_good_state")
	res := wr.j.annotate(Result{
		"ok": true, "handoff_path": wr.disp, "sha256": wr.sha, "bytes": wr.size,
		"journal_id": wr.j.id, "drift_warnings": w.drift(lgs.([]any)),
	})
	if refs := w.checkpointRefs(); len(refs) > 0 {
		res["checkpoint_refs"] = refs
	}
	return res, nil
}

// archiveHandoff copies the previous handoff into
// <state>/handoffs/<YYYYmmddTHHMMSSZ>_<task_id>.md (task_id reduced to safe
// file-name characters), never replacing an earlier archive.
func (w *Workspace) archiveHandoff(ctx context.Context, taskID string, old []byte) error {
	st, err := w.stateRoot(true)
	if err != nil {
		return err
	}
	defer st.Close()
	safe := strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.') {
			return r
		}
		return '_'
	}, taskID)
	safe = strings.TrimLeft(safe, ".")
	if safe == "" {
		safe = "task"
	}
	safe = cut(safe, 100)
	base := "handoffs/" + w.nowUTC().Format("20060102T150405Z") + "_" + safe
	for i := 1; ; i++ {
		name := base + ".md"
		if i > 1 {
			name = fmt.Sprintf("%s_%d.md", base, i)
		}
		_, _, err := w.writeState(ctx, nil, st, name, old, true, "")
		if !errors.Is(err, errExists) {
			return err
		}
	}
}

// drift compares last_good_state entries with the files on disk.
func (w *Workspace) drift(lgs []any) []map[string]any {
	out := []map[string]any{}
	for _, e := range lgs {
		var pv, sv any
		switch t := e.(type) {
		case orderedObject:
			pv, _ = t.get("path")
			sv, _ = t.get("sha256")
		case map[string]any:
			pv, sv = t["path"], t["sha256"]
		}
		p, ok := pv.(string)
		if !ok {
			out = append(out, map[string]any{"path": pv, "reason": "invalid_path"})
			continue
		}
		t, err := w.resolve(p)
		if err != nil {
			out = append(out, map[string]any{"path": p, "reason": "invalid_path"})
			continue
		}
		data, exists, err := w.readExisting(t)
		switch {
		case err != nil:
			out = append(out, map[string]any{"path": p, "reason": "invalid_path"})
		case !exists:
			out = append(out, map[string]any{"path": p, "reason": "missing"})
		default:
			if got := sha256Hex(data); got != fmt.Sprint(sv) {
				out = append(out, map[string]any{"path": p, "reason": "hash_mismatch", "expected_sha256": sv, "actual_sha256": got})
			}
		}
	}
	return out
}

// HandoffRead parses a handoff file and reports drift and checkpoints.
func (w *Workspace) HandoffRead(ctx context.Context, path string) (Result, error) {
	if err := w.allow("rw.handoff_read", ""); err != nil {
		return nil, err
	}
	if path == "" {
		path = DefaultHandoffPath
	}
	t, err := w.resolve(path)
	if err != nil {
		return nil, err
	}
	data, exists, err := w.readExisting(t)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, staleErr(ActionAbort, "not_found", map[string]any{"path": path})
	}
	env, body, err := parseHandoff(string(data))
	if err != nil {
		return nil, err
	}
	get := func(k string) (any, bool) { v, ok := env[k]; return v, ok }
	if err := validateHandoff(get); err != nil {
		return nil, err
	}
	res := Result{
		"ok": true, "handoff_path": t.disp, "envelope": env, "body": body,
		"drift_warnings": w.drift(env["last_good_state"].([]any)),
	}
	if refs := w.checkpointRefs(); len(refs) > 0 {
		res["checkpoint_refs"] = refs
	}
	return res, nil
}

// parseHandoff splits "---\n<YAML>\n---\n<body>" into the envelope and body.
func parseHandoff(text string) (map[string]any, string, error) {
	if !strings.HasPrefix(text, "---") {
		return nil, "", encodingErr("missing_front_matter_delimiter", nil)
	}
	rest := strings.TrimLeft(text[3:], "\n")
	end := strings.Index(rest, "\n---")
	if end < 0 {
		return nil, "", encodingErr("unterminated_front_matter", nil)
	}
	var doc any
	if err := yaml.Unmarshal([]byte(rest[:end]), &doc); err != nil {
		return nil, "", encodingErr("yaml_error: "+err.Error(), nil)
	}
	if doc == nil {
		doc = map[string]any{}
	}
	env, ok := normalizeYAML(doc).(map[string]any)
	if !ok {
		return nil, "", encodingErr("front_matter_not_mapping", nil)
	}
	return env, strings.TrimLeft(rest[end+4:], "\n"), nil
}

// checkpointRefs lists the checkpoints as {name, sha256, bytes, path}.
func (w *Workspace) checkpointRefs() []map[string]any {
	st, err := w.stateRoot(false)
	if err != nil || st == nil {
		return nil
	}
	defer st.Close()
	ents, _, err := listDir(st, checkpointDir)
	if err != nil {
		return nil
	}
	var refs []map[string]any
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		data, err := w.readState(st, checkpointDir+"/"+e.Name())
		if err != nil {
			continue
		}
		refs = append(refs, map[string]any{"name": name, "sha256": sha256Hex(data), "bytes": len(data), "path": w.statePath(checkpointDir + "/" + e.Name())})
	}
	return refs
}
