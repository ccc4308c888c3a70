//go:build !amd64 && !arm64

package jsonplan

import (
	"encoding/binary"
	"unsafe"
)

// Load64 reads the eight bytes at p+i as a little-endian word, without a
// bounds check: the caller has made sure they lie within one object.
func Load64(p unsafe.Pointer, i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(p, i)), 8))
}

// Store64 writes x little-endian to the eight bytes at p+i, without a
// bounds check: the caller has made sure they lie within one object.
func Store64(p unsafe.Pointer, i int, x uint64) {
	binary.LittleEndian.PutUint64(unsafe.Slice((*byte)(unsafe.Add(p, i)), 8), x)
}
