//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package cli

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's settings.
const ioctlGetTermios = unix.TIOCGETA
