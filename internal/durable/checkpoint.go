package durable

import (
	"context"
	"errors"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"time"
)

const (
	checkpointDir = "checkpoints"
	// checkpointChunkThreshold is the size above which Resilient Write
	// routes a checkpoint through chunks and reports chunked:true. We write
	// it in one transaction (so no multibyte character can be split) and
	// still report chunked.
	checkpointChunkThreshold = 1 << 20
)

var (
	validFormats = []string{"json", "yaml", "markdown"}
	isoDuration  = regexp.MustCompile(`^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$`)
)

func checkpointFile(name string) string { return checkpointDir + "/" + name + ".json" }

func validateCheckpointName(name string) error {
	if !namePattern.MatchString(name) {
		return encodingErr("name_must_match_^[A-Za-z0-9_-]{1,64}$", map[string]any{"name": name})
	}
	return nil
}

// parseISODuration returns the duration of P[nY][nM][nD][T[nH][nM][nS]]
// with Y = 365 days and M = 30 days.
func parseISODuration(s string) (time.Duration, bool) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	unit := []time.Duration{365 * 24 * time.Hour, 30 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second}
	var d time.Duration
	for i, g := range m[1:] {
		if g == "" {
			continue
		}
		n, err := strconv.ParseInt(g, 10, 64)
		if err != nil || n > int64(1<<62)/int64(unit[i]) {
			return 1<<63 - 1, true
		}
		d += time.Duration(n) * unit[i]
	}
	return d, true
}

// CheckpointParams are rw.checkpoint's arguments.
type CheckpointParams struct {
	Name     string
	Data     []byte // any JSON value
	Format   string // json (default), yaml or markdown: metadata only
	TTL      string // session (default), permanent, or an ISO-8601 duration
	Progress ProgressFunc
}

// Checkpoint saves named intermediate data as
// <state>/checkpoints/<name>.json (sorted keys, indent 2, non-ASCII kept),
// keeping created_at across overwrites. The file is written in one
// transaction at any size.
func (w *Workspace) Checkpoint(ctx context.Context, p CheckpointParams) (Result, error) {
	if err := w.allow("rw.checkpoint", ""); err != nil {
		return nil, err
	}
	if err := validateCheckpointName(p.Name); err != nil {
		return nil, err
	}
	format, ttl := p.Format, p.TTL
	if format == "" {
		format = "json"
	}
	if ttl == "" {
		ttl = "session"
	}
	if !contains(validFormats, format) {
		return nil, encodingErr("", map[string]any{"format": format, "valid": validFormats})
	}
	if _, ok := parseISODuration(ttl); ttl != "session" && ttl != "permanent" && !ok {
		return nil, encodingErr("ttl_must_be_session|permanent|ISO_8601_duration", map[string]any{"ttl": ttl})
	}
	var data any
	if err := decodeJSON(p.Data, &data); err != nil {
		return nil, encodingErr("data_not_json: "+err.Error(), nil)
	}
	h, err := w.acquire(ctx, lockName(classCheckpoint, p.Name), true, true)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	st, err := w.stateRoot(true)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	now := isoSeconds(w.nowUTC())
	created := any(now)
	if old, err := w.readState(st, checkpointFile(p.Name)); err == nil {
		var m map[string]any
		if decodeJSON(old, &m) == nil {
			if c, ok := m["created_at"]; ok {
				created = c
			}
		}
	}
	text, err := marshalIndent(map[string]any{
		"name": p.Name, "format": format, "created_at": created, "updated_at": now, "ttl": ttl, "data": data,
	})
	if err != nil {
		return nil, encodingErr("data_not_json: "+err.Error(), nil)
	}
	chunked := len(text) > checkpointChunkThreshold
	p.Progress.report(0, float64(len(text)), "writing checkpoint")
	_, statErr := st.Lstat(checkpointFile(p.Name))
	mode := ModeCreate
	if statErr == nil {
		mode = ModeOverwrite
	}
	sha, j, err := w.writeState(ctx, h, st, checkpointFile(p.Name), text, false, mode)
	if err != nil {
		return nil, err
	}
	p.Progress.report(float64(len(text)), float64(len(text)), "checkpoint written")
	return j.annotate(Result{
		"ok": true, "name": p.Name, "format": format, "ttl": ttl, "checkpoint_path": w.statePath(checkpointFile(p.Name)),
		"sha256": sha, "bytes": len(text), "journal_id": j.id, "created_at": created, "updated_at": now, "chunked": chunked,
	}), nil
}

// CheckpointRead returns a checkpoint's data and metadata.
func (w *Workspace) CheckpointRead(ctx context.Context, name string) (Result, error) {
	if err := w.allow("rw.checkpoint_read", ""); err != nil {
		return nil, err
	}
	if err := validateCheckpointName(name); err != nil {
		return nil, err
	}
	notFound := staleErr(ActionAbort, "checkpoint_not_found", map[string]any{"name": name})
	st, err := w.stateRoot(false)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, notFound
	}
	defer st.Close()
	raw, err := w.readState(st, checkpointFile(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound
	}
	if err != nil {
		return nil, fsError(err, w.statePath(checkpointFile(name)))
	}
	var v any
	if err := decodeJSON(raw, &v); err != nil {
		return nil, corruptErr(ReasonEncoding, "corrupt_checkpoint: "+err.Error(), map[string]any{"name": name})
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, corruptErr(ReasonEncoding, "missing_data_field", map[string]any{"name": name})
	}
	data, ok := m["data"]
	if !ok {
		return nil, corruptErr(ReasonEncoding, "missing_data_field", map[string]any{"name": name})
	}
	return Result{
		"ok": true, "name": orDefault(m, "name", name), "format": orDefault(m, "format", "json"),
		"ttl": orDefault(m, "ttl", "session"), "created_at": m["created_at"], "updated_at": m["updated_at"],
		"data": data, "sha256": sha256Hex(raw), "bytes": len(raw),
	}, nil
}

func orDefault(m map[string]any, k string, def any) any {
	if v, ok := m[k]; ok {
		return v
	}
	return def
}

// checkpointEntry is one checkpoint file found on disk.
type checkpointEntry struct {
	name string
	raw  []byte
	meta map[string]any // nil when corrupt
}

// checkpoints reads every <state>/checkpoints/*.json.
func (w *Workspace) checkpoints() ([]checkpointEntry, error) {
	st, err := w.stateRoot(false)
	if err != nil || st == nil {
		return nil, err
	}
	defer st.Close()
	ents, _, err := listDir(st, checkpointDir)
	if err != nil {
		return nil, fsError(err, w.statePath(checkpointDir))
	}
	var out []checkpointEntry
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		raw, err := w.readState(st, checkpointDir+"/"+e.Name())
		if err != nil {
			continue
		}
		ce := checkpointEntry{name: name, raw: raw}
		var m map[string]any
		if decodeJSON(raw, &m) == nil && m != nil {
			ce.meta = m
		}
		out = append(out, ce)
	}
	return out, nil
}

// CheckpointList lists checkpoints without their data.
func (w *Workspace) CheckpointList(ctx context.Context) (Result, error) {
	if err := w.allow("rw.checkpoint_list", ""); err != nil {
		return nil, err
	}
	cps, err := w.checkpoints()
	if err != nil {
		return nil, err
	}
	list := []map[string]any{}
	for _, c := range cps {
		e := map[string]any{"name": c.name, "bytes": len(c.raw), "checkpoint_path": w.statePath(checkpointFile(c.name))}
		if c.meta == nil {
			e["corrupt"] = true
		} else {
			e["format"] = orDefault(c.meta, "format", "json")
			e["ttl"] = orDefault(c.meta, "ttl", "session")
			e["created_at"] = c.meta["created_at"]
			e["updated_at"] = c.meta["updated_at"]
			e["sha256"] = sha256Hex(c.raw)
		}
		list = append(list, e)
	}
	return Result{"ok": true, "checkpoints": list, "count": len(list)}, nil
}

// CheckpointCleanup removes corrupt checkpoints, session checkpoints (when
// includeSession) and those whose ISO-duration TTL has passed since
// updated_at; permanent ones, zero durations and unparsable timestamps stay.
func (w *Workspace) CheckpointCleanup(ctx context.Context, includeSession bool) (Result, error) {
	if err := w.allow("rw.checkpoint_cleanup", ""); err != nil {
		return nil, err
	}
	cps, err := w.checkpoints()
	if err != nil {
		return nil, err
	}
	removed := []map[string]any{}
	kept := 0
	now := w.nowUTC()
	var drop []string
	for _, c := range cps {
		if c.meta == nil {
			drop = append(drop, c.name)
			removed = append(removed, map[string]any{"name": c.name, "ttl": "unknown", "reason": "corrupt"})
			continue
		}
		ttl, _ := orDefault(c.meta, "ttl", "session").(string)
		switch ttl {
		case "permanent":
			kept++
			continue
		case "session":
			if includeSession {
				drop = append(drop, c.name)
				removed = append(removed, map[string]any{"name": c.name, "ttl": "session", "reason": "session_cleanup"})
			} else {
				kept++
			}
			continue
		}
		d, ok := parseISODuration(ttl)
		upd, _ := c.meta["updated_at"].(string)
		ut, terr := parseISOTime(upd)
		if !ok || d <= 0 || terr != nil || now.Sub(ut) <= d {
			kept++
			continue
		}
		drop = append(drop, c.name)
		removed = append(removed, map[string]any{"name": c.name, "ttl": ttl, "reason": "expired"})
	}
	if len(drop) > 0 {
		st, err := w.stateRoot(false)
		if err != nil {
			return nil, err
		}
		if st != nil {
			for _, n := range drop {
				h, err := w.acquire(ctx, lockName(classCheckpoint, n), true, true)
				if err == nil {
					err = st.Remove(checkpointFile(n))
					h.unlock()
				}
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					st.Close()
					return nil, fsError(err, w.statePath(checkpointFile(n)))
				}
			}
			if err := syncDir(st, checkpointDir); err != nil {
				w.log.Warn("durable: fsync checkpoints", "err", err)
			}
			st.Close()
		}
	}
	return Result{"ok": true, "removed": removed, "kept": kept}, nil
}

// parseISOTime accepts the timestamps Python's datetime.fromisoformat does
// in practice: RFC 3339 with Z or an offset, optional fractional seconds, a
// naive date-time (taken as UTC) or a bare date.
func parseISOTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("durable: not an ISO-8601 timestamp")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
