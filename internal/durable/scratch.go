package durable

import (
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"strings"
	"unicode/utf8"
)

const scratchIndex = "scratch/index.jsonl"

var validEncodings = []string{"utf-8", "base64"}

func scratchBin(sha string) string { return "scratch/" + sha + ".bin" }

func validateSHA(sha string) error {
	ok := len(sha) == 64
	for i := 0; ok && i < len(sha); i++ {
		c := sha[i]
		ok = c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
	}
	if !ok {
		return encodingErr("not_a_lowercase_sha256_hex", map[string]any{"sha256": sha})
	}
	return nil
}

func unsupportedEncoding(enc string) error {
	return encodingErr("unsupported_encoding", map[string]any{"encoding": enc, "valid": validEncodings})
}

// decodeContent turns tool input into bytes: utf-8 as is, base64 strictly
// (padding required, no whitespace).
func decodeContent(content, enc string) ([]byte, error) {
	switch enc {
	case "", "utf-8":
		return []byte(content), nil
	case "base64":
		if strings.ContainsAny(content, "\r\n") {
			return nil, encodingErr("bad_base64: line breaks are not allowed", nil)
		}
		b, err := base64.StdEncoding.Strict().DecodeString(content)
		if err != nil {
			return nil, encodingErr("bad_base64: "+err.Error(), nil)
		}
		return b, nil
	}
	return nil, unsupportedEncoding(enc)
}

// ScratchPutParams are rw.scratch_put's arguments.
type ScratchPutParams struct {
	Content     string
	Label       *string
	ContentType *string
	Notes       *string
	Encoding    string // utf-8 (default) or base64
}

// ScratchPut stores material out of the working tree, content-addressed by
// SHA-256 (identical bytes are stored once, "deduped"). Every put appends an
// index row, so labels are aliases. A warning reminds that the state
// directory is not git-ignored.
func (w *Workspace) ScratchPut(ctx context.Context, p ScratchPutParams) (Result, error) {
	if err := w.allow("rw.scratch_put", ""); err != nil {
		return nil, err
	}
	enc := p.Encoding
	if enc == "" {
		enc = "utf-8"
	}
	payload, err := decodeContent(p.Content, enc)
	if err != nil {
		return nil, err
	}
	sha := sha256Hex(payload)
	h, err := w.acquire(ctx, lockScratch, true, true)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	st, err := w.stateRoot(true)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	_, statErr := st.Lstat(scratchBin(sha))
	deduped := statErr == nil
	var journalID any
	var j journaled
	if !deduped {
		_, jr, err := w.writeState(ctx, h, st, scratchBin(sha), payload, true, ModeCreate)
		if err != nil && !errors.Is(err, errExists) {
			return nil, err
		}
		if err == nil {
			journalID, j = jr.id, jr
		} else {
			deduped = true
		}
	}
	row, err := MarshalASCII(map[string]any{
		"sha256": sha, "label": optString(p.Label), "content_type": optString(p.ContentType), "bytes": len(payload),
		"encoding": enc, "notes": optString(p.Notes), "created_at": isoSeconds(w.nowUTC()),
	})
	if err != nil {
		return nil, err
	}
	if err := appendStateLine(st, scratchIndex, row, w.statePath(scratchIndex)); err != nil {
		return nil, err
	}
	return j.annotate(Result{
		"ok": true, "sha256": sha, "scratch_path": w.statePath(scratchBin(sha)), "bytes": len(payload),
		"deduped": deduped, "journal_id": journalID, "warnings": w.gitignoreWarnings(),
	}), nil
}

// gitignoreWarnings warns unless a .gitignore line names the state
// directory (or its top component) in one of the usual spellings.
func (w *Workspace) gitignoreWarnings() []map[string]any {
	data, _, err := readChecked(w.ws().r, ".gitignore", ".gitignore", 1<<20)
	if err == nil {
		needles := map[string]bool{}
		comps := strings.Split(w.state, "/")
		for i := range comps {
			d := strings.Join(comps[:i+1], "/")
			for _, f := range []string{d, d + "/", "/" + d, "/" + d + "/", "**/" + d, "**/" + d + "/"} {
				needles[f] = true
			}
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !strings.HasPrefix(line, "#") && needles[line] {
				return []map[string]any{}
			}
		}
	}
	return []map[string]any{{
		"reason": "state_dir_not_gitignored",
		"hint":   "add '" + w.state + "/' to .gitignore to keep scratched material out of git",
	}}
}

// scratchRows reads the scratch index.
func (w *Workspace) scratchRows() ([]map[string]any, error) {
	st, err := w.stateRoot(false)
	if err != nil || st == nil {
		return nil, err
	}
	defer st.Close()
	data, err := w.readState(st, scratchIndex)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fsError(err, w.statePath(scratchIndex))
	}
	return parseJSONLines(data, func(line string) error {
		return corruptErr(ReasonEncoding, "", map[string]any{"index": w.statePath(scratchIndex), "bad_line": cut(line, 200)})
	})
}

// ScratchRef looks up the latest index row matching sha256 and/or label
// (both filter when both are given) without returning content.
func (w *Workspace) ScratchRef(ctx context.Context, sha, label *string) (Result, error) {
	if err := w.allow("rw.scratch_ref", ""); err != nil {
		return nil, err
	}
	if sha == nil && label == nil {
		return nil, encodingErr("must_provide_sha256_or_label", nil)
	}
	if sha != nil {
		if err := validateSHA(*sha); err != nil {
			return nil, err
		}
	}
	rows, err := w.scratchRows()
	if err != nil {
		return nil, err
	}
	var matches []map[string]any
	for _, r := range rows {
		if sha != nil && r["sha256"] != *sha {
			continue
		}
		if label != nil && r["label"] != *label {
			continue
		}
		matches = append(matches, r)
	}
	if len(matches) == 0 {
		return nil, staleErr(ActionAbort, "not_found", map[string]any{"sha256": optString(sha), "label": optString(label)})
	}
	entry := matches[len(matches)-1]
	esha, _ := entry["sha256"].(string)
	exists := false
	if validateSHA(esha) == nil {
		if st, err := w.stateRoot(false); err == nil && st != nil {
			_, err := st.Lstat(scratchBin(esha))
			exists = err == nil
			st.Close()
		}
	}
	return Result{"ok": true, "entry": entry, "scratch_path": w.statePath(scratchBin(esha)), "bin_exists": exists, "alias_count": len(matches)}, nil
}

// ScratchGet returns stored material by hash, re-hashing it first. It is
// refused when reads are disabled (checked before anything else).
func (w *Workspace) ScratchGet(ctx context.Context, sha, enc string) (Result, error) {
	if w.cfg.ScratchGetDisabled {
		return nil, policyErr(ReasonPermission, "scratch_get_disabled", map[string]any{"env": "RW_SCRATCH_DISABLE_GET"})
	}
	if err := w.allow("rw.scratch_get", ""); err != nil {
		return nil, err
	}
	if err := validateSHA(sha); err != nil {
		return nil, err
	}
	if enc == "" {
		enc = "utf-8"
	}
	if enc != "utf-8" && enc != "base64" {
		return nil, unsupportedEncoding(enc)
	}
	notFound := staleErr(ActionAbort, "not_found", map[string]any{"sha256": sha})
	st, err := w.stateRoot(false)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, notFound
	}
	defer st.Close()
	payload, err := w.readState(st, scratchBin(sha))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound
	}
	if err != nil {
		return nil, fsError(err, w.statePath(scratchBin(sha)))
	}
	if got := sha256Hex(payload); got != sha {
		return nil, corruptErr(ReasonUnknown, "hash_drift_on_read", map[string]any{"sha256": sha, "actual_sha256": got})
	}
	var meta map[string]any
	if rows, err := w.scratchRows(); err == nil {
		for _, r := range rows {
			if r["sha256"] == sha {
				meta = r
			}
		}
	}
	var content string
	if enc == "base64" {
		content = base64.StdEncoding.EncodeToString(payload)
	} else {
		if !utf8.Valid(payload) {
			e := policyErr(ReasonEncoding, "not_valid_utf8", map[string]any{"hint": "retry_with_encoding_base64", "detail": firstInvalidUTF8(payload)})
			e.Action = ActionRetryLater
			return nil, e
		}
		content = string(payload)
	}
	return Result{
		"ok": true, "sha256": sha, "content": content, "encoding": enc, "bytes": len(payload),
		"content_type": meta["content_type"], "label": meta["label"],
	}, nil
}
