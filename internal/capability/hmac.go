package capability

import (
	"crypto/sha256"
	"encoding/binary"
)

const (
	blockSize = 64  // SHA-256 block size
	inlineMsg = 128 // messages up to this size are hashed without allocating
)

// mac returns HMAC-SHA256(key, msg) as RFC 2104 defines it. It works on stack
// buffers so that Verify does not allocate: crypto/hmac would allocate two
// hash states per call, and the chain makes one call per caveat.
func mac(key, msg []byte) [sha256.Size]byte {
	if len(key) > blockSize {
		h := sha256.Sum256(key)
		key = h[:]
	}
	var inner [sha256.Size]byte
	if len(msg) <= inlineMsg {
		var buf [blockSize + inlineMsg]byte
		copy(buf[:], key)
		xorPad(buf[:blockSize], 0x3636363636363636)
		n := copy(buf[blockSize:], msg)
		inner = sha256.Sum256(buf[:blockSize+n])
	} else {
		var pad [blockSize]byte
		copy(pad[:], key)
		xorPad(pad[:], 0x3636363636363636)
		h := sha256.New()
		h.Write(pad[:])
		h.Write(msg)
		h.Sum(inner[:0])
	}
	var outer [blockSize + sha256.Size]byte
	copy(outer[:], key)
	xorPad(outer[:blockSize], 0x5c5c5c5c5c5c5c5c)
	copy(outer[blockSize:], inner[:])
	return sha256.Sum256(outer[:])
}

// xorPad XORs the 64-byte block b with the repeated pad byte, a word at a
// time.
func xorPad(b []byte, pad uint64) {
	_ = b[blockSize-1]
	for i := 0; i < blockSize; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], binary.LittleEndian.Uint64(b[i:])^pad)
	}
}
