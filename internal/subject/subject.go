// Package subject hashes raw identifying material into the subjects that
// quota's stores count by. quota.Subject is its public face; admit rls
// hashes the bytes it assembles with the same function, without copying
// them into a string first.
package subject

import (
	"crypto/sha256"
	"encoding/hex"
)

// Len is the length of every subject [Of] returns.
const Len = 32

// Of returns the first Len lowercase hex characters of raw's SHA-256. It
// takes bytes or a string so that neither caller converts, which would
// copy.
func Of[T string | []byte](raw T) string {
	sum := sha256.Sum256([]byte(raw))
	var hexed [Len]byte
	hex.Encode(hexed[:], sum[:Len/2])
	return string(hexed[:])
}
