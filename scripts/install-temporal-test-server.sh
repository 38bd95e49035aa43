#!/usr/bin/env bash
# Temporal's time-skipping test server for the workflow tests (test/workflow). The TS SDK's
# createTimeSkipping() would download a native build from GitHub; Maven Central serves the same
# server as a Java artifact (io.temporal:temporal-test-server, main class
# io.temporal.testserver.TestServer, arguments `<port> [--enable-time-skipping]`). Maven fetches it
# with its dependencies into ~/.cache/landfall/temporal-test-server-<version>/lib, and a wrapper
# script there runs it with java, so the SDK can start it as an existing executable. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/versions.sh
DIR="$HOME/.cache/landfall/temporal-test-server-$TEMPORAL_TEST_SERVER_VERSION"
BIN="$DIR/temporal-test-server"
[ -x "$BIN" ] && [ -f "$DIR/lib/temporal-test-server-$TEMPORAL_TEST_SERVER_VERSION.jar" ] && [ -f "$DIR/lib/slf4j-nop-1.7.36.jar" ] && exit 0
if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
  echo "setup: java or mvn missing (scripts/install-system-tools.sh installs them as root); the time-skipping workflow tests will fail" >&2
  exit 0
fi
echo "setup: fetching Temporal's test server $TEMPORAL_TEST_SERVER_VERSION (Maven Central) into $DIR" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>landfall</groupId><artifactId>temporal-test-server-fetch</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>io.temporal</groupId><artifactId>temporal-test-server</artifactId><version>$TEMPORAL_TEST_SERVER_VERSION</version></dependency>
    <!-- Quiets SLF4J's "no binding" warning on every start: the server logs nothing we read. -->
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-nop</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
POM
rm -rf "$DIR.tmp"
mkdir -p "$DIR.tmp"
# Maven's output only when it fails (its quiet mode still prints colour codes).
if ! mvn -q -B -Dstyle.color=never -f "$work/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$DIR.tmp/lib" >"$work/mvn.log" 2>&1; then
  cat "$work/mvn.log" >&2
  echo "setup: Maven could not fetch io.temporal:temporal-test-server:$TEMPORAL_TEST_SERVER_VERSION" >&2
  exit 1
fi
cat >"$DIR.tmp/temporal-test-server" <<'SH'
#!/bin/sh
# Runs Temporal's Java test server: temporal-test-server <port> [--enable-time-skipping]
# exec: the SDK stops the server by signalling the process it started.
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Xmx256m -cp "$(dirname "$0")/lib/*" io.temporal.testserver.TestServer "$@"
SH
chmod +x "$DIR.tmp/temporal-test-server"
rm -rf "$DIR"
mv "$DIR.tmp" "$DIR"
echo "setup: Temporal test server at $BIN" >&2
