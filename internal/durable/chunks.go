package durable

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"unicode/utf8"
)

const maxChunkIndex = 999

var partPattern = regexp.MustCompile(`^part-(\d{3})\.txt$`)

// ProgressFunc receives progress of a long operation: done out of total
// (0 when unknown) and a short message. It must not block.
type ProgressFunc func(done, total float64, msg string)

func (f ProgressFunc) report(done, total float64, msg string) {
	if f != nil {
		f(done, total, msg)
	}
}

func validateSession(s string) error {
	if !namePattern.MatchString(s) {
		return encodingErr("session_must_match_^[A-Za-z0-9_-]{1,64}$", map[string]any{"session": s})
	}
	return nil
}

func validateTotal(total *int) error {
	if total != nil && (*total < 1 || *total > maxChunkIndex) {
		return encodingErr(fmt.Sprintf("total_expected_must_be_int_in_1..%d", maxChunkIndex), map[string]any{"total_expected": *total})
	}
	return nil
}

func validateIndex(index int, total *int) error {
	if index < 1 || index > maxChunkIndex {
		return encodingErr(fmt.Sprintf("index_must_be_int_in_1..%d", maxChunkIndex), map[string]any{"index": index})
	}
	if err := validateTotal(total); err != nil {
		return err
	}
	if total != nil && index > *total {
		return encodingErr("index_exceeds_total_expected", map[string]any{"index": index, "total_expected": *total})
	}
	return nil
}

func sessionDir(s string) string               { return "chunks/" + s }
func partName(s string, i int) string          { return fmt.Sprintf("chunks/%s/part-%03d.txt", s, i) }
func manifestName(s string) string             { return "chunks/" + s + "/manifest.json" }
func sessionLock(s string) string              { return lockName(classChunk, s) }
func (w *Workspace) chunkDisp(s string) string { return w.statePath(sessionDir(s)) }

// ChunkWriteParams are rw.chunk_write's arguments.
type ChunkWriteParams struct {
	Session       string
	Index         int
	Content       string
	TotalExpected *int
}

// ChunkWrite writes (or rewrites: retrying is idempotent) one numbered part
// of a session and journals it with mode overwrite.
func (w *Workspace) ChunkWrite(ctx context.Context, p ChunkWriteParams) (Result, error) {
	if err := w.allow("rw.chunk_write", ""); err != nil {
		return nil, err
	}
	if err := validateSession(p.Session); err != nil {
		return nil, err
	}
	if err := validateIndex(p.Index, p.TotalExpected); err != nil {
		return nil, err
	}
	h, err := w.acquire(ctx, sessionLock(p.Session), true, true)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	return w.writePart(ctx, h, p.Session, p.Index, p.Content, p.TotalExpected, false)
}

// ChunkAppendParams are rw.chunk_append's arguments.
type ChunkAppendParams struct {
	Session       string
	Content       string
	TotalExpected *int
}

// ChunkAppend writes the part after the highest existing one (gaps are not
// filled), or part 1. Appends to one session are serialized by the session
// lock across every server process on the root, and each part is created
// exclusively besides, so N concurrent appends leave N parts.
func (w *Workspace) ChunkAppend(ctx context.Context, p ChunkAppendParams) (Result, error) {
	if err := w.allow("rw.chunk_append", ""); err != nil {
		return nil, err
	}
	if err := validateSession(p.Session); err != nil {
		return nil, err
	}
	if err := validateTotal(p.TotalExpected); err != nil {
		return nil, err
	}
	h, err := w.acquire(ctx, sessionLock(p.Session), true, true)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	for range 8 {
		idx, err := w.partIndices(p.Session)
		if err != nil {
			return nil, err
		}
		next := 1
		if len(idx) > 0 {
			next = idx[len(idx)-1] + 1
		}
		if err := validateIndex(next, p.TotalExpected); err != nil {
			return nil, err
		}
		res, err := w.writePart(ctx, h, p.Session, next, p.Content, p.TotalExpected, true)
		if errors.Is(err, errExists) {
			continue // a part written by hand meanwhile; look again
		}
		return res, err
	}
	return nil, staleErr(ActionRetryLater, "chunk_append_contention", map[string]any{"session": p.Session})
}

// writePart writes one part and updates the manifest; the session lock h is
// held.
func (w *Workspace) writePart(ctx context.Context, h *lockHandle, session string, index int, content string, total *int, exclusive bool) (Result, error) {
	st, err := w.stateRoot(true)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	name := partName(session, index)
	sha, j, err := w.writeState(ctx, h, st, name, []byte(content), exclusive, ModeOverwrite)
	if err != nil {
		return nil, err
	}
	man, err := w.readManifest(st, session)
	if err != nil {
		return nil, err
	}
	now := isoSeconds(w.nowUTC())
	created := any(now)
	if c, ok := man["created_at"]; ok {
		created = c
	}
	var te any
	if total != nil {
		te = *total
	} else if v, ok := man["total_expected"]; ok {
		te = v
	}
	data, err := marshalIndent(map[string]any{"session": session, "created_at": created, "updated_at": now, "total_expected": te})
	if err != nil {
		return nil, err
	}
	if _, _, err := w.writeState(context.WithoutCancel(ctx), h, st, manifestName(session), data, false, ""); err != nil {
		return nil, err
	}
	return j.annotate(Result{
		"ok": true, "session": session, "index": index, "chunk_path": w.statePath(name),
		"sha256": sha, "bytes": len(content), "journal_id": j.id,
	}), nil
}

// readManifest returns the session manifest, or an empty map if absent.
func (w *Workspace) readManifest(st *os.Root, session string) (map[string]any, error) {
	data, err := w.readState(st, manifestName(session))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{}, nil
	}
	disp := w.statePath(manifestName(session))
	if err != nil {
		return nil, fsError(err, disp)
	}
	var v any
	if err := decodeJSON(data, &v); err != nil {
		return nil, corruptErr(ReasonEncoding, "bad_manifest: "+err.Error(), map[string]any{"manifest": disp})
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, corruptErr(ReasonEncoding, "not_mapping", map[string]any{"manifest": disp})
	}
	return m, nil
}

// partIndices lists the session's part numbers in order.
func (w *Workspace) partIndices(session string) ([]int, error) {
	st, err := w.stateRoot(false)
	if err != nil || st == nil {
		return nil, err
	}
	defer st.Close()
	idx, _, err := w.listParts(st, session)
	return idx, err
}

// listParts lists part numbers and whether the session directory exists.
func (w *Workspace) listParts(st *os.Root, session string) ([]int, bool, error) {
	ents, ok, err := listDir(st, sessionDir(session))
	if err != nil {
		return nil, ok, fsError(err, w.chunkDisp(session))
	}
	var idx []int
	for _, e := range ents {
		if m := partPattern.FindStringSubmatch(e.Name()); m != nil && e.Type().IsRegular() {
			n, _ := strconv.Atoi(m[1])
			idx = append(idx, n)
		}
	}
	return idx, ok, nil
}

// assembled is a checked, concatenated session.
type assembled struct {
	data   []byte
	hashes []string
	count  int
}

// assemble checks a session (exists, has parts, parts exactly 1..N, N equal
// to total_expected when set) and concatenates its parts with sep, which
// must leave valid UTF-8. The session lock is held.
func (w *Workspace) assemble(ctx context.Context, session, sep string, progress ProgressFunc) (assembled, error) {
	ctxMap := func(why string) map[string]any { return map[string]any{"session": session, "reason": why} }
	st, err := w.stateRoot(false)
	if err != nil {
		return assembled{}, err
	}
	if st == nil {
		return assembled{}, staleErr(ActionAbort, "", ctxMap("session_not_found"))
	}
	defer st.Close()
	idx, exists, err := w.listParts(st, session)
	if err != nil {
		return assembled{}, err
	}
	if !exists {
		return assembled{}, staleErr(ActionAbort, "", ctxMap("session_not_found"))
	}
	if len(idx) == 0 {
		return assembled{}, staleErr(ActionAbort, "", ctxMap("no_chunks_found"))
	}
	var missing, unexpected []int
	have := map[int]bool{}
	for _, i := range idx {
		have[i] = true
		if i > len(idx) {
			unexpected = append(unexpected, i)
		}
	}
	for i := 1; i <= len(idx); i++ {
		if !have[i] {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 || len(unexpected) > 0 {
		c := ctxMap("non_contiguous_chunks")
		c["have"], c["missing"], c["unexpected"] = idx, orEmpty(missing), orEmpty(unexpected)
		return assembled{}, staleErr(ActionAbort, "", c)
	}
	man, err := w.readManifest(st, session)
	if err != nil {
		return assembled{}, err
	}
	if te, ok := jsonInt(man["total_expected"]); ok && te != len(idx) {
		c := ctxMap("chunk_count_mismatch")
		c["have"], c["total_expected"] = len(idx), te
		return assembled{}, staleErr(ActionAbort, "", c)
	}
	var out assembled
	for n, i := range idx {
		if err := ctx.Err(); err != nil {
			return assembled{}, err
		}
		part, err := w.readState(st, partName(session, i))
		if err != nil {
			return assembled{}, fsError(err, w.statePath(partName(session, i)))
		}
		if n > 0 {
			out.data = append(out.data, sep...)
		}
		out.data = append(out.data, part...)
		out.hashes = append(out.hashes, sha256Hex(part))
		progress.report(float64(n+1), float64(len(idx)+1), fmt.Sprintf("read part %d of %d", n+1, len(idx)))
	}
	out.count = len(idx)
	if !utf8.Valid(out.data) {
		return assembled{}, corruptErr(ReasonEncoding, "composed_not_utf8: "+firstInvalidUTF8(out.data), map[string]any{"session": session})
	}
	return out, nil
}

// firstInvalidUTF8 describes where data stops being UTF-8.
func firstInvalidUTF8(data []byte) string {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return fmt.Sprintf("invalid start byte 0x%02x in position %d", data[i], i)
		}
		i += n
	}
	return "invalid UTF-8"
}

func orEmpty(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// ChunkComposeParams are rw.chunk_compose's arguments.
type ChunkComposeParams struct {
	Session    string
	OutputPath string
	Separator  string
	Cleanup    bool
	Progress   ProgressFunc
}

// ChunkCompose assembles a session into OutputPath (overwrite if it exists,
// else create) through the same transactional write as rw.safe_write, then
// optionally removes the session. A cancel before the output is renamed into
// place leaves nothing behind.
func (w *Workspace) ChunkCompose(ctx context.Context, p ChunkComposeParams) (Result, error) {
	const tool = "rw.chunk_compose"
	if err := w.allow(tool, ""); err != nil {
		return nil, err
	}
	if err := validateSession(p.Session); err != nil {
		return nil, err
	}
	hs, err := w.acquire(ctx, sessionLock(p.Session), true, true)
	if err != nil {
		return nil, err
	}
	defer hs.unlock()
	a, err := w.assemble(ctx, p.Session, p.Separator, p.Progress)
	if err != nil {
		return nil, err
	}
	t, err := w.resolve(p.OutputPath)
	if err != nil {
		return nil, err
	}
	if err := w.allow(tool, t.disp); err != nil {
		return nil, err
	}
	hp, err := w.lockPath(ctx, t)
	if err != nil {
		return nil, err
	}
	exists, err := w.statExisting(t)
	if err != nil {
		hp.unlock()
		return nil, err
	}
	mode := ModeCreate
	if exists {
		mode = ModeOverwrite
	}
	wr, err := w.writeUserLocked(ctx, hp, t, a.data, mode, !exists)
	hp.unlock()
	if err != nil {
		return nil, err
	}
	if p.Cleanup {
		if err := w.removeSession(p.Session); err != nil {
			return nil, err
		}
	}
	p.Progress.report(float64(a.count+1), float64(a.count+1), "composed")
	return wr.j.annotate(Result{
		"ok": true, "session": p.Session, "output_path": wr.disp, "sha256": wr.sha, "bytes": wr.size,
		"chunk_count": a.count, "chunk_hashes": a.hashes, "journal_id": wr.j.id, "cleaned_up": p.Cleanup,
	}), nil
}

// removeSession deletes a session directory and returns how many files it
// held.
func (w *Workspace) removeSession(session string) error {
	_, err := w.resetSession(session)
	return err
}

// resetSession removes a session and returns the number of files it held,
// or -1 when there was no such session.
func (w *Workspace) resetSession(session string) (int, error) {
	st, err := w.stateRoot(false)
	if err != nil {
		return 0, err
	}
	if st == nil {
		return -1, nil
	}
	defer st.Close()
	removed := 0
	sub, err := st.OpenRoot(sessionDir(session))
	if errors.Is(err, fs.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return 0, fsError(err, w.chunkDisp(session))
	}
	fs.WalkDir(sub.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			removed++
		}
		return nil
	})
	sub.Close()
	if err := st.RemoveAll(sessionDir(session)); err != nil {
		return 0, fsError(err, w.chunkDisp(session))
	}
	if err := syncDir(st, "chunks"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fsError(err, w.chunkDisp(session))
	}
	return removed, nil
}

// ChunkReset deletes a session: parts, manifest and directory.
func (w *Workspace) ChunkReset(ctx context.Context, session string) (Result, error) {
	if err := w.allow("rw.chunk_reset", ""); err != nil {
		return nil, err
	}
	if err := validateSession(session); err != nil {
		return nil, err
	}
	h, err := w.acquire(ctx, sessionLock(session), w.stateExists(), true)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	n, err := w.resetSession(session)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return Result{"ok": true, "session": session, "removed": 0, "existed": false}, nil
	}
	return Result{"ok": true, "session": session, "removed": n, "existed": true}, nil
}

// ChunkStatus reports a session: whether it exists, its total_expected and
// the part numbers present.
func (w *Workspace) ChunkStatus(ctx context.Context, session string) (Result, error) {
	if err := w.allow("rw.chunk_status", ""); err != nil {
		return nil, err
	}
	if err := validateSession(session); err != nil {
		return nil, err
	}
	h, err := w.acquire(ctx, sessionLock(session), false, true)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	st, err := w.stateRoot(false)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return Result{"ok": true, "session": session, "exists": false}, nil
	}
	defer st.Close()
	idx, exists, err := w.listParts(st, session)
	if err != nil {
		return nil, err
	}
	if !exists {
		return Result{"ok": true, "session": session, "exists": false}, nil
	}
	man, err := w.readManifest(st, session)
	if err != nil {
		return nil, err
	}
	return Result{
		"ok": true, "session": session, "exists": true, "total_expected": man["total_expected"],
		"present_indices": orEmpty(idx), "chunk_dir": w.chunkDisp(session),
	}, nil
}

// ChunkPreviewParams are rw.chunk_preview's arguments.
type ChunkPreviewParams struct {
	Session   string
	Separator string
	Progress  ProgressFunc
}

// ChunkPreview returns what rw.chunk_compose would write, with the same
// checks, and writes nothing.
func (w *Workspace) ChunkPreview(ctx context.Context, p ChunkPreviewParams) (Result, error) {
	if err := w.allow("rw.chunk_preview", ""); err != nil {
		return nil, err
	}
	if err := validateSession(p.Session); err != nil {
		return nil, err
	}
	h, err := w.acquire(ctx, sessionLock(p.Session), false, true)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	a, err := w.assemble(ctx, p.Session, p.Separator, p.Progress)
	if err != nil {
		return nil, err
	}
	return Result{
		"ok": true, "session": p.Session, "content": string(a.data), "chunk_count": a.count,
		"chunk_hashes": a.hashes, "total_bytes": len(a.data), "preview": true,
	}, nil
}
