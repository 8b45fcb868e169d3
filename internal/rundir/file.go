package rundir

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/apiary-dev/apiary/internal/atomicfile"
	"github.com/apiary-dev/apiary/internal/envelope"
)

// WriteFile writes data to path (mode 0644) so that readers see the old
// content or the new, never a mix, and so that it survives a power loss
// (atomicfile.Write: a temporary file in the same directory, fsync, rename,
// fsync of the directory). Missing parent directories are created.
func WriteFile(path string, data []byte) error { return write(path, data, true) }

// WriteFileUnsynced is WriteFile without the fsyncs: atomic for readers,
// but not durable. For copies that are not state (an envelope in a
// worktree).
func WriteFileUnsynced(path string, data []byte) error { return write(path, data, false) }

func write(path string, data []byte, durable bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if durable {
		return atomicfile.Write(path, data, 0o644)
	}
	return atomicfile.WriteUnsynced(path, data, 0o644)
}

// SyncDir fsyncs a directory, making a rename or create in it durable.
func SyncDir(dir string) error { return atomicfile.SyncDir(dir) }

// WriteJSON writes v as indented JSON with WriteFile.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(path, append(b, '\n'))
}

// WriteEnvelope validates and writes an envelope to path atomically;
// durable adds the fsyncs (the copy in the run directory is state; the one
// in a worktree is not).
func WriteEnvelope(path string, e *envelope.Envelope, durable bool) error {
	b, err := envelope.EncodeEnvelope(e)
	if err != nil {
		return err
	}
	return write(path, append(b, '\n'), durable)
}

// WriteReceipt validates and writes a receipt to path.
func WriteReceipt(path string, r *envelope.Receipt) error {
	b, err := envelope.EncodeReceipt(r)
	if err != nil {
		return err
	}
	return WriteFile(path, append(b, '\n'))
}

// ReadLimited reads at most n bytes of path; a larger file is an error.
func ReadLimited(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n+1))
	if err == nil && int64(len(b)) > n {
		err = fmt.Errorf("larger than %d bytes", n)
	}
	return b, err
}
