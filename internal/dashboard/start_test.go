package dashboard

import (
	"net"
	"net/http"
	"slices"
	"testing"
	"time"
)

func TestAllowedHosts(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string][]string{
		"127.0.0.1:7421": nil, "localhost:0": nil, "[::1]:80": nil,
		"0.0.0.0:7421": {"*"}, "192.0.2.7:80": {"*"}, ":7421": {"*"},
	} {
		if got := AllowedHosts(addr); !slices.Equal(got, want) {
			t.Errorf("AllowedHosts(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestStart: the page is served until stop, which waits for the server to
// end; nothing is reported as an error.
func TestStart(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := s.Start(t.Context(), l, func(err error) { t.Errorf("serving: %v", err) })
	resp, err := http.Get("http://" + l.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /: %s", resp.Status)
	}
	stop()
	if _, err := http.Get("http://" + l.Addr().String() + "/"); err == nil {
		t.Error("still serving after stop")
	}
}
