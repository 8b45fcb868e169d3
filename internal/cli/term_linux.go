package cli

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's settings.
const ioctlGetTermios = unix.TCGETS
