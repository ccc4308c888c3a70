package handlers

import (
	"context"
	"fmt"
	"strconv"
)

// EnvShadow names the environment variable that marks a function as
// running a shadow replay (sluice replay --shadow sets it to 1 for the
// bootstrap it starts; a deployed shadow function is configured with it).
// A handler built with it true reports Shadow(ctx) true for every record,
// and keeps its idempotency keys in a namespace of their own (the prefix
// ShadowKeyPrefix before the function name), so a shadow replay neither
// skips the records production completed nor blocks production's claims.
const EnvShadow = "SLUICE_SHADOW"

// ShadowKeyPrefix prefixes every idempotency key a handler claims in a
// shadow replay.
const ShadowKeyPrefix = "shadow#"

// shadowKey carries the shadow mark in a record's context.
type shadowKey struct{}

// Shadow reports whether the record runs in a shadow replay (EnvShadow
// true in the function's environment): the function should then write its
// effects to a shadow sink, not the production one. It is false outside a
// handler of this package.
func Shadow(ctx context.Context) bool {
	v, _ := ctx.Value(shadowKey{}).(bool)
	return v
}

// shadowOn reads EnvShadow: unset or empty is false; otherwise a value
// strconv.ParseBool accepts (1, true, 0, false...).
func shadowOn(c *config) (bool, error) {
	v, _ := c.lookupEnv(EnvShadow)
	if v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want 1 or true for a shadow replay, 0 or false (or unset) otherwise", EnvShadow, v)
	}
	return on, nil
}
