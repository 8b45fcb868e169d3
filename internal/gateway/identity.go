package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
)

// identity is who a request is from, as the gateway understands it.
type identity struct {
	agent    string
	keyID    string // virtual key id, or "key:" + a hash of the presented key
	vkey     *VirtualKey
	priority int
	// keyHeader is the header that carried the key ("" for ?key=), so a
	// virtual key can be replaced by the real key in the same place.
	keyHeader string
	keyQuery  bool
	// flight is the request's entry among the key's flights (nil without
	// a virtual key).
	flight *flight
}

// presentedKey finds the credential a client sent, in any provider's style.
func presentedKey(r *http.Request) (key, header string, query bool) {
	if v := r.Header.Get("X-Api-Key"); v != "" {
		return v, "X-Api-Key", false
	}
	if v := r.Header.Get("Authorization"); v != "" {
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok {
			return strings.TrimSpace(tok), "Authorization", false
		}
	}
	if v := r.Header.Get("Api-Key"); v != "" {
		return v, "Api-Key", false
	}
	if v := r.Header.Get("X-Goog-Api-Key"); v != "" {
		return v, "X-Goog-Api-Key", false
	}
	if v := r.URL.Query().Get("key"); v != "" {
		return v, "", true
	}
	return "", "", false
}

// identify names the agent behind r: a virtual key's agent; else the
// X-Apiary-Agent header (or HIVEMIND's X-Hivemind-Agent-Id); else the Claude
// Code session; else a hash of the presented key. A virtual key that is unknown or revoked is an error.
func (g *Gateway) identify(ctx context.Context, r *http.Request) (*identity, error) {
	key, header, query := presentedKey(r)
	id := &identity{keyHeader: header, keyQuery: query}
	if key != "" {
		sum := sha256.Sum256([]byte(key))
		id.keyID = "key:" + hex.EncodeToString(sum[:6])
	}
	if strings.HasPrefix(key, VirtualKeyPrefix) {
		vk, err := g.keys.lookup(ctx, key)
		if err != nil {
			return nil, err
		}
		id.vkey = &vk
		id.agent = vk.Agent
		id.keyID = vk.ID
		id.priority = vk.Priority
	}
	if id.agent == "" {
		switch {
		case r.Header.Get("X-Apiary-Agent") != "":
			id.agent = r.Header.Get("X-Apiary-Agent")
		case r.Header.Get("X-Hivemind-Agent-Id") != "":
			// Agents set up for HIVEMIND's proxy name themselves so.
			id.agent = r.Header.Get("X-Hivemind-Agent-Id")
		case r.Header.Get("X-Claude-Code-Session-Id") != "":
			id.agent = "session:" + r.Header.Get("X-Claude-Code-Session-Id")
		case id.keyID != "":
			id.agent = id.keyID
		default:
			id.agent = "anonymous"
		}
	}
	if p, ok := g.cfg.Agents[id.agent]; ok && id.vkey == nil {
		id.priority = p.Priority
	}
	if v := r.Header.Get("X-Apiary-Priority"); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			id.priority = n
		}
	}
	return id, nil
}

// substituteKey replaces a virtual key with the upstream's real key, in the
// place the client put it.
func (id *identity) substituteKey(out *http.Request, real string) {
	if id.vkey == nil {
		return
	}
	switch {
	case id.keyQuery:
		q := out.URL.Query()
		q.Set("key", real)
		out.URL.RawQuery = q.Encode()
	case id.keyHeader == "Authorization":
		out.Header.Set("Authorization", "Bearer "+real)
	case id.keyHeader != "":
		out.Header.Set(id.keyHeader, real)
	}
}
