//go:build amd64 || arm64

package jsonplan

import "unsafe"

// Load64 reads the eight bytes at p+i as a little-endian word, without a
// bounds check: the caller has made sure they lie within one object. On
// amd64 and arm64, little-endian and unaligned loads in hardware, it is one
// load.
func Load64(p unsafe.Pointer, i int) uint64 { return *(*uint64)(unsafe.Add(p, i)) }

// Store64 writes x little-endian to the eight bytes at p+i, without a
// bounds check: the caller has made sure they lie within one object.
func Store64(p unsafe.Pointer, i int, x uint64) { *(*uint64)(unsafe.Add(p, i)) = x }
