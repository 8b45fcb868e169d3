package capability

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// WriteKeyFile writes a new key of MinKeyLen bytes from rnd to the file
// name, with mode 0600, and syncs it. An existing file is never
// overwritten: that would orphan every token minted with its key.
func WriteKeyFile(name string, rnd io.Reader) error {
	key := make([]byte, MinKeyLen)
	if _, err := io.ReadFull(rnd, key); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists; refusing to overwrite a key", name)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		os.Remove(name)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadKeyFile reads a key WriteKeyFile wrote; one shorter than MinKeyLen
// is an error.
func ReadKeyFile(name string) ([]byte, error) {
	key, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("key file %s holds %d bytes, need at least %d (create one with 'apiary cap keygen')", name, len(key), MinKeyLen)
	}
	return key, nil
}
