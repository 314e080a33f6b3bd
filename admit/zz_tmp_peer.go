package admit

import (
	"net/http"
	"net/netip"
)

func tmpPeerKey(r *http.Request) netip.Prefix {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	a := ap.Addr().Unmap()
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.WithZone("").Prefix(64)
	return p
}
