package jsonplan

import (
	"reflect"
	"unsafe"
)

// SetInt stores i in the integer of kind (reflect.Int to reflect.Int64) at
// p, reporting false, and storing nothing, when i does not fit.
func SetInt(p unsafe.Pointer, kind reflect.Kind, i int64) bool {
	switch kind {
	case reflect.Int8:
		if i != int64(int8(i)) {
			return false
		}
		*(*int8)(p) = int8(i)
	case reflect.Int16:
		if i != int64(int16(i)) {
			return false
		}
		*(*int16)(p) = int16(i)
	case reflect.Int32:
		if i != int64(int32(i)) {
			return false
		}
		*(*int32)(p) = int32(i)
	case reflect.Int:
		if i != int64(int(i)) {
			return false
		}
		*(*int)(p) = int(i)
	default:
		*(*int64)(p) = i
	}
	return true
}

// SetUint stores u in the unsigned integer of kind (reflect.Uint to
// reflect.Uintptr) at p, reporting false, and storing nothing, when u does
// not fit.
func SetUint(p unsafe.Pointer, kind reflect.Kind, u uint64) bool {
	switch kind {
	case reflect.Uint8:
		if u != uint64(uint8(u)) {
			return false
		}
		*(*uint8)(p) = uint8(u)
	case reflect.Uint16:
		if u != uint64(uint16(u)) {
			return false
		}
		*(*uint16)(p) = uint16(u)
	case reflect.Uint32:
		if u != uint64(uint32(u)) {
			return false
		}
		*(*uint32)(p) = uint32(u)
	case reflect.Uint:
		if u != uint64(uint(u)) {
			return false
		}
		*(*uint)(p) = uint(u)
	case reflect.Uintptr:
		if u != uint64(uintptr(u)) {
			return false
		}
		*(*uintptr)(p) = uintptr(u)
	default:
		*(*uint64)(p) = u
	}
	return true
}

// reflectKind maps the integer node kinds to reflect's, for SetInt and
// SetUint.
var reflectKind = [...]reflect.Kind{
	kInt: reflect.Int, kInt8: reflect.Int8, kInt16: reflect.Int16, kInt32: reflect.Int32, kInt64: reflect.Int64,
	kUint: reflect.Uint, kUint8: reflect.Uint8, kUint16: reflect.Uint16, kUint32: reflect.Uint32, kUint64: reflect.Uint64,
	kUintptr: reflect.Uintptr,
}
