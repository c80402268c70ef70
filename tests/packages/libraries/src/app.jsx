/** @jsxImportSource preact */
// Apps built on npm packages the web platform issue names, each on its own path: itty-router
// routes this app, zod validates a JSON body, preact-render-to-string renders a page, and jose
// signs and verifies JWTs (HS256, ES256, RS256, EdDSA) and round trips JWKs.
import { AutoRouter, json, error } from "itty-router";
import { z } from "zod";
import { render } from "preact-render-to-string";
import * as jose from "jose";

const router = AutoRouter();

// itty-router: params, query, and its json/error helpers.
router.get("/itty/items/:id", ({ params, query }) => json({ id: params.id, sort: query.sort ?? null }));
router.get("/itty/missing", () => error(404, "nothing here"));

// zod: parse a JSON body; a failure is a 400 listing the issues.
const User = z.object({ name: z.string().min(2), age: z.number().int().nonnegative(), email: z.email() });
router.post("/zod/users", async (request) => {
  const result = User.safeParse(await request.json());
  if (!result.success) {
    return json({ issues: result.error.issues.map((i) => i.path.join(".")) }, { status: 400 });
  }
  return json({ created: result.data.name });
});

// preact-render-to-string: a component tree with props and escaping.
function Page({ title, items }) {
  return (
    <html>
      <body>
        <h1>{title}</h1>
        <ul>{items.map((item) => <li key={item}>{item}</li>)}</ul>
      </body>
    </html>
  );
}
router.get("/preact", () =>
  new Response(`<!doctype html>${render(<Page title="Fish & <chips>" items={["cod", "haddock"]} />)}`, {
    headers: { "content-type": "text/html; charset=utf-8" },
  }),
);

// jose: for each algorithm, generate a key pair, sign a JWT, verify it with the public key
// (exported to and imported from a JWK, and from SPKI where it applies) and reject a tampered
// token. Answers what happened per algorithm.
async function roundTrip(alg) {
  const options = alg === "EdDSA" ? { crv: "Ed25519", extractable: true } : { extractable: true };
  const { publicKey, privateKey } =
    alg === "HS256" ? { publicKey: null, privateKey: null } : await jose.generateKeyPair(alg, options);
  const secret = alg === "HS256" ? new TextEncoder().encode("a secret of at least 32 bytes!!!") : null;
  const jwt = await new jose.SignJWT({ role: "tester" })
    .setProtectedHeader({ alg })
    .setSubject("ada")
    .setIssuedAt()
    .setExpirationTime("2m")
    .sign(secret ?? privateKey);
  let verifyKey = secret;
  let jwkKty = null;
  if (publicKey) {
    const jwk = await jose.exportJWK(publicKey);
    jwkKty = jwk.kty;
    verifyKey = await jose.importJWK(jwk, alg);
  }
  const { payload, protectedHeader } = await jose.jwtVerify(jwt, verifyKey);
  let spki = null;
  if (publicKey) {
    const pem = await jose.exportSPKI(publicKey);
    await jose.jwtVerify(jwt, await jose.importSPKI(pem, alg));
    spki = pem.startsWith("-----BEGIN PUBLIC KEY-----");
  }
  const [head, body, sig] = jwt.split(".");
  // The signature's first character changed (all its bits are the signature's, unlike the last's).
  const tampered = `${head}.${body}.${sig[0] === "A" ? "g" : "A"}${sig.slice(1)}`;
  let tamperedRejected = false;
  try {
    await jose.jwtVerify(tampered, verifyKey);
  } catch (e) {
    tamperedRejected = e.code === "ERR_JWS_SIGNATURE_VERIFICATION_FAILED";
  }
  return { alg: protectedHeader.alg, sub: payload.sub, role: payload.role, jwkKty, spki, tamperedRejected };
}
router.get("/jose/:alg", async ({ params }) => json(await roundTrip(params.alg)));

export default { fetch: router.fetch };
