"""A browser for ``$BROWSER`` in the OAuth tests: it follows the authorisation URL's
redirects with plain HTTP (the test server approves at once), back to harness's loopback
listener, as a person's browser would after they approved."""

import sys

import httpx2

if __name__ == "__main__":
    answer = httpx2.get(sys.argv[1], follow_redirects=True, timeout=30)
    sys.exit(0 if answer.status_code == 200 else 1)
