package gateway

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// wsFrames follows the frames a WebSocket server sends (RFC 6455, section
// 5) as their bytes go by, whatever the read boundaries, and hands over each
// complete text message, its fragments joined. It only looks: the bytes fed
// are neither changed nor kept, except the payload of the text message
// being assembled (up to maxMessage) and the frame header being read.
// Control frames (close, ping, pong) may come between the fragments of a
// message, as the RFC allows; binary messages are skipped.
//
// Anything it cannot follow stops it for good, with an error: a reserved
// bit set (RSV1 is a compressed frame of permessage-deflate, which the
// gateway does not let the two ends negotiate), a masked frame (a server
// never masks), an unknown opcode, a fragmented or oversized control frame,
// a continuation with no message to continue or a new message inside a
// fragmented one, a 64-bit length with its top bit set, a text message over
// maxMessage. The zero value is not ready: set maxMessage.
type wsFrames struct {
	maxMessage int

	hdr  [10]byte // the frame header read so far (no masking key: servers never mask)
	hlen int      // bytes of hdr read; 0 between frames

	// The current frame, once its header is complete (inFrame).
	inFrame bool
	op      byte
	fin     bool
	left    uint64 // payload bytes still to come

	// The data message in progress (between its first frame and the one
	// with FIN): fragmented tells a continuation is expected; text that it
	// is a text message, whose payload is gathered in msg.
	fragmented bool
	text       bool
	msg        []byte

	err error
}

// WebSocket opcodes (RFC 6455, section 5.2).
const (
	wsContinuation = 0x0
	wsText         = 0x1
	wsBinary       = 0x2
	wsClose        = 0x8
	wsPing         = 0x9
	wsPong         = 0xA
)

// wsKeepMessage is the capacity of a message buffer kept for the next
// message; a larger one (after a large message) is let go.
const wsKeepMessage = 1 << 20

// feed follows the next bytes of the stream, calling onText with each text
// message as it completes (msg is valid only during the call). After an
// error every call returns it and looks at nothing.
func (f *wsFrames) feed(p []byte, onText func(msg []byte)) error {
	for f.err == nil {
		if !f.inFrame {
			if len(p) == 0 {
				break
			}
			p = f.header(p)
			continue
		}
		n := int(min(f.left, uint64(len(p))))
		if f.text && f.op <= wsBinary {
			f.msg = append(f.msg, p[:n]...)
		}
		f.left -= uint64(n)
		p = p[n:]
		if f.left > 0 {
			break // p is used up
		}
		f.endFrame(onText)
	}
	return f.err
}

// headerLen is the length of the header being read, as far as its first
// two bytes tell.
func (f *wsFrames) headerLen() int {
	if f.hlen >= 2 {
		switch f.hdr[1] & 0x7F {
		case 126:
			return 4
		case 127:
			return 10
		}
	}
	return 2
}

// header reads header bytes from p and returns the rest; once the header
// is complete it starts the frame.
func (f *wsFrames) header(p []byte) []byte {
	for len(p) > 0 && !f.inFrame && f.err == nil {
		need := f.headerLen()
		n := copy(f.hdr[f.hlen:need], p)
		f.hlen += n
		p = p[n:]
		if f.hlen == 2 {
			if f.err = f.check(); f.err != nil {
				return nil
			}
		}
		if f.hlen == f.headerLen() {
			f.begin()
		}
	}
	return p
}

// check validates the first two bytes of a frame header.
func (f *wsFrames) check() error {
	b0, b1 := f.hdr[0], f.hdr[1]
	op := b0 & 0x0F
	switch {
	case b0&0x70 != 0:
		return fmt.Errorf("websocket frame with reserved bits %#x set (compressed?)", b0&0x70)
	case b1&0x80 != 0:
		return errors.New("masked websocket frame from the server")
	}
	switch op {
	case wsContinuation:
		if !f.fragmented {
			return errors.New("websocket continuation frame outside a fragmented message")
		}
	case wsText, wsBinary:
		if f.fragmented {
			return errors.New("websocket data frame inside a fragmented message")
		}
	case wsClose, wsPing, wsPong:
		if b0&0x80 == 0 {
			return errors.New("fragmented websocket control frame")
		}
		if b1&0x7F > 125 {
			return errors.New("websocket control frame over 125 bytes")
		}
	default:
		return fmt.Errorf("websocket frame with reserved opcode %#x", op)
	}
	return nil
}

// begin starts the frame whose header is complete; feed ends it once its
// payload has gone by (at once if it is empty).
func (f *wsFrames) begin() {
	b0, b1 := f.hdr[0], f.hdr[1]
	var n uint64
	switch l := b1 & 0x7F; l {
	case 126:
		n = uint64(binary.BigEndian.Uint16(f.hdr[2:4]))
	case 127:
		n = binary.BigEndian.Uint64(f.hdr[2:10])
		if n>>63 != 0 {
			f.err = fmt.Errorf("websocket frame length %#x has its top bit set", n)
			return
		}
	default:
		n = uint64(l)
	}
	f.hlen = 0
	f.inFrame, f.op, f.fin, f.left = true, b0&0x0F, b0&0x80 != 0, n
	switch f.op {
	case wsText, wsBinary:
		f.text = f.op == wsText
		f.fragmented = true
	}
	if f.text && f.op <= wsBinary && uint64(len(f.msg))+n > uint64(f.maxMessage) {
		f.err = fmt.Errorf("websocket text message over %d bytes", f.maxMessage)
		return
	}
}

// endFrame ends the current frame; a data frame with FIN ends its message.
func (f *wsFrames) endFrame(onText func([]byte)) {
	f.inFrame = false
	if f.op > wsBinary || !f.fin {
		return
	}
	if f.text && onText != nil {
		onText(f.msg)
	}
	f.fragmented, f.text = false, false
	f.msg = f.msg[:0]
	if cap(f.msg) > wsKeepMessage {
		f.msg = nil
	}
}
