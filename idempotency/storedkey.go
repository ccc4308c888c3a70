package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

// DigestMarker separates the kept head of a long key from its digest in
// the form StoredKey gives it.
const DigestMarker = "#sha256:"

// digestLen is the length of DigestMarker and the hex SHA-256 after it.
const digestLen = len(DigestMarker) + 2*sha256.Size

// StoredKey returns the form in which a store whose keys hold at most
// limit bytes keeps key: key itself when it fits, and otherwise the
// longest head of key made of whole UTF-8 characters that leaves room,
// then DigestMarker and the hex SHA-256 of the whole key (limit bytes at
// most). So a store refuses no key a user can produce (an S3 object key
// of 1,024 bytes, URL-encoded into a notification's default key, is three
// times that), and an operator still reads where a long key came from.
//
// The form is part of what is stored, so it never changes between
// versions: a long key written by one version is found by the next. Two
// different keys have different forms as long as SHA-256 has no known
// collision (the head is kept for reading only). A key that already ends
// in DigestMarker and 64 hex digits could be mistaken for another key's
// form only if it were made from that key's hash on purpose.
//
// The DynamoDB store keeps keys up to 2,048 bytes (the partition key's
// limit; 1,024 with WithSortKey, the sort key's); the Redis store's limit
// is Redis's own, 512 MB, so it keeps every key as it is.
func StoredKey(key string, limit int) string {
	if len(key) <= limit || limit < digestLen {
		return key
	}
	cut := limit - digestLen
	for cut > 0 && !utf8.RuneStart(key[cut]) {
		cut-- // not inside a character: at most three steps back
	}
	head := key[:cut]
	sum := sha256.Sum256([]byte(key))
	return head + DigestMarker + hex.EncodeToString(sum[:])
}
