// A large body POSTed with Node's own fetch (undici), as a Node client team would send it:
// prints {"status", "code"} of the answer, or {"error"} and exits 1 when no answer was read
// (a connection reset while the body was still being sent).
//   NODE_EXTRA_CA_CERTS=<data-dir>/tls.crt node fetch_large_body.mjs URL BYTES
const [url, bytes] = process.argv.slice(2);
try {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: Buffer.alloc(Number(bytes), 0x20),
  });
  const body = await res.json();
  console.log(JSON.stringify({ status: res.status, code: body.code }));
} catch (e) {
  console.log(JSON.stringify({ error: String(e.cause ? e.cause.code || e.cause.message : e.message) }));
  process.exit(1);
}
