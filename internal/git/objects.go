package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// object is one object read from the object database.
type object struct {
	oid  string // hex
	typ  string // "blob", "tree", "commit", "tag"
	data []byte
}

// objectReader reads objects through one long-lived `git cat-file --batch`
// in the repository, so that a pooled checkout pays no process start for
// the trees and blobs it needs. It is safe for concurrent use (requests are
// serialized); the process starts on first use, is restarted after any
// failure, and ends with close.
type objectReader struct{ batchProc }

func newObjectReader(repo *Repo) *objectReader {
	return &objectReader{batchProc{repo: repo, args: []string{"cat-file", "--batch"}, buf: 64 << 10}}
}

// get reads the named objects (ids or any revision expression git accepts,
// "<commit>^{tree}" included), in order. A name that does not resolve is
// ErrNotFound. Requests are written while responses are read, so any number
// of names costs one round trip.
func (o *objectReader) get(ctx context.Context, names ...string) ([]object, error) {
	var req bytes.Buffer
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, "\n\x00") {
			return nil, fmt.Errorf("%w: object name %q", ErrBadArgument, n)
		}
		req.WriteString(n)
		req.WriteByte('\n')
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.ready(); err != nil {
		return nil, err
	}
	stopWatch := context.AfterFunc(ctx, o.stop)
	defer stopWatch()
	werr := make(chan error, 1)
	go func() {
		_, err := o.stdin.Write(req.Bytes())
		werr <- err
	}()
	out := make([]object, 0, len(names))
	var err error
	for _, n := range names {
		var ob object
		ob, err = o.readOne(n)
		if err != nil {
			break
		}
		out = append(out, ob)
	}
	if err == nil {
		err = <-werr
	}
	if err != nil && !errors.Is(err, ErrNotFound) || ctx.Err() != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		} else if msg := strings.TrimSpace(o.stderr.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		o.kill()
		return nil, fmt.Errorf("git cat-file --batch: %w", err)
	}
	if err != nil {
		// A missing object leaves the stream in step; drain what is queued.
		for range len(names) - len(out) - 1 {
			if _, derr := o.readOne(""); derr != nil && !errors.Is(derr, ErrNotFound) {
				o.kill()
				break
			}
		}
		<-werr
		return nil, err
	}
	return out, nil
}

// readOne reads one response: "<oid> <type> <size>\n<data>\n", or
// "<name> missing\n" / "<name> ambiguous\n".
func (o *objectReader) readOne(name string) (object, error) {
	line, err := o.stdout.ReadString('\n')
	if err != nil {
		return object{}, err
	}
	f := strings.Fields(line)
	if len(f) == 2 && (f[1] == "missing" || f[1] == "ambiguous") {
		return object{}, fmt.Errorf("%w: object %q is %s", ErrNotFound, name, f[1])
	}
	if len(f) != 3 {
		return object{}, fmt.Errorf("unexpected header %q", line)
	}
	size, err := strconv.Atoi(f[2])
	if err != nil || size < 0 {
		return object{}, fmt.Errorf("unexpected header %q", line)
	}
	data := make([]byte, size+1)
	if _, err := io.ReadFull(o.stdout, data); err != nil {
		return object{}, err
	}
	if data[size] != '\n' {
		return object{}, errors.New("object not followed by a newline")
	}
	return object{oid: f[0], typ: f[1], data: data[:size]}, nil
}

// treeEntry is one entry of a tree object.
type treeEntry struct {
	name string
	mode uint32 // 0o100644, 0o100755, 0o120000, 0o160000 or 0o40000
	oid  string // raw bytes, not hex
}

func (e treeEntry) isTree() bool { return e.mode == 0o40000 }

// parseTree decodes a tree object's entries ("<octal mode> <name>\0<raw
// id>"), whose ids are hashLen bytes. Names and ids share one copy of data.
func parseTree(raw []byte, hashLen int) ([]treeEntry, error) {
	t, err := newTree(raw, hashLen)
	if err != nil {
		return nil, err
	}
	out := make([]treeEntry, t.len())
	for i := range out {
		out[i] = t.at(i)
	}
	return out, nil
}
