// JSON Web Tokens on isolane with the npm packages `jose` (https://github.com/panva/jose) and
// Hono's `jwt` middleware, both over crypto.subtle: what a Cloudflare Workers or Deno app does.
//
// Bundled by tools/bundle-examples.mjs into ../dist/app.js. Mounted at "/jwt":
//   GET /selftest           signs and verifies HS256, ES256, RS256 and EdDSA tokens with jose (keys
//                           generated here, exported to JWK and imported back), and checks that a
//                           tampered token is refused; answers JSON { alg: "ok" | error }
//   GET /node-tokens        verifies tokens signed by jose under Node (fixed below)
//   GET /token?sub=NAME     an HS256 token from hono/jwt's sign()
//   GET /protected          Hono's jwt middleware: 401 without a valid Bearer token, else the claims

import { Hono } from "hono";
import { jwt, sign } from "hono/jwt";
import * as jose from "jose";

// Tokens and public keys made by jose 6 under Node 24 (a cross-implementation check).
const NODE_TOKENS = {
  "ES256": {
    "jwk": {
      "kty": "EC",
      "x": "qPthc8a3hmnO1-BySbaiqiYWL8WDPkaIFsE9NiJi2Hc",
      "y": "fZVpy86qBy16WRsUO-Gy8CXLkDoDQ7--tgCata3mEak",
      "crv": "P-256"
    },
    "token": "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJub2RlIiwiYWxnIjoiRVMyNTYiLCJpYXQiOjE3MDAwMDAwMDB9.eGXxJSjYdO0ZQdqnpj7f2VtVR-PrCGzh2TClPzV-8JJFf3XOgmeRX_H-EkqccDcwrzW4YKj7LMNFkRu_fmfJfg"
  },
  "RS256": {
    "jwk": {
      "kty": "RSA",
      "n": "lFuCHaEi7Ia1aEyW1mPvapWiddwvHoaOPhmJ-EkGDJHFBvt0Gffqhdgdon5tCGXlIqLGATqxMBdAsrrrh_CYqMUuciAkXy6ONDfgx3PEe7i2wXQCa4M8pu5xVinq0EaGTQeHmI3cao26eZkdZxF0lPUa65aqF6FGiMdoPnnHsdkvuOhRvRIdp0OJwmivDdfz_vNx40rBarzQXfGLb1IoyGnZn5JumG5p_mb4h7cAO1nnzJe6eK_T37bbsWDSBhll55Pwb7YXZOub1LLXYI_NaO7fRkKTG4-GnP_NrZxracM6HB1S22t9_OTt3kTyoPHSV4w2nhBHlTfOo_5TBKHP4w",
      "e": "AQAB"
    },
    "token": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJub2RlIiwiYWxnIjoiUlMyNTYiLCJpYXQiOjE3MDAwMDAwMDB9.TzlNnWgZrJwIy491jRkWG766x7IC-18AH2JeCb0XGeu6JTt41U-00wy8VxfpLRrviOVziXQMcE_h_0wS5VpyPr6g6kpJTmF3P2raKm9YCVHScLJJHGcws219KCsLGtC9eaXDaiNeLEeKjBOHTI1uqsuVN25tEX4io2Grt2rT0_v9i-Z2r2KaI0_iu6xdrEaURzg3zGhnhhqULfOqiQHxr0isPKb5yn-U4BhMACRapSOZFT9K7BoVY-ilSS_CPELcZWPcWqDvl1bi5NrVmtaaRpzZu6aNiSotH9hUkAUs8lqPRZk3k8KQ1GyEoezEiHYKWMMTUfNsgIDNHt-Kzr5J3g"
  },
  "EdDSA": {
    "jwk": {
      "kty": "OKP",
      "crv": "Ed25519",
      "x": "6ien3i2MauCDGWBtPnsQeQpSdg1LwVJzd9BOY_Ux97M"
    },
    "token": "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJub2RlIiwiYWxnIjoiRWREU0EiLCJpYXQiOjE3MDAwMDAwMDB9.fCXsNlXZL6IvtQUlOKbf1CcANcsX9gcRHpaN6xX_jDvz7J9Aw2618yjz8wxTMHCpaSeTfkjkNNhrBztFFs80Aw"
  }
};

const SECRET = "isolane-example-secret";
const app = new Hono();

// Signs and verifies a token with fresh keys, then again with the keys exported (JWK, and for key
// pairs SPKI / PKCS #8 PEM) and imported back; a token with a changed signature must be refused.
async function selfTest(alg) {
  let signKey;
  let verifyKey;
  if (alg === "HS256") {
    signKey = verifyKey = await jose.generateSecret(alg, { extractable: true });
  } else {
    ({ privateKey: signKey, publicKey: verifyKey } = await jose.generateKeyPair(alg, { extractable: true }));
  }
  const token = await new jose.SignJWT({ sub: "isolane" })
    .setProtectedHeader({ alg })
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(signKey);
  const { payload } = await jose.jwtVerify(token, verifyKey);
  if (payload.sub !== "isolane") return "wrong subject";

  const again = await new jose.SignJWT({ sub: "again" })
    .setProtectedHeader({ alg })
    .sign(await jose.importJWK(await jose.exportJWK(signKey), alg));
  const viaJwk = await jose.jwtVerify(again, await jose.importJWK(await jose.exportJWK(verifyKey), alg));
  if (viaJwk.payload.sub !== "again") return "wrong subject after the JWK round trip";
  if (alg !== "HS256") {
    const spki = await jose.importSPKI(await jose.exportSPKI(verifyKey), alg);
    const pkcs8 = await jose.importPKCS8(await jose.exportPKCS8(signKey), alg);
    await jose.jwtVerify(await new jose.SignJWT({}).setProtectedHeader({ alg }).sign(pkcs8), spki);
  }

  const [h, p, s] = token.split(".");
  const tampered = `${h}.${p}.${s[0] === "A" ? "B" : "A"}${s.slice(1)}`;
  try {
    await jose.jwtVerify(tampered, verifyKey);
    return "a tampered token was accepted";
  } catch (e) {
    if (e.code !== "ERR_JWS_SIGNATURE_VERIFICATION_FAILED") return `tampered: ${e.code ?? e}`;
  }
  return "ok";
}

app.get("/selftest", async (c) => {
  const out = {};
  for (const alg of ["HS256", "ES256", "RS256", "EdDSA"]) {
    try {
      out[alg] = await selfTest(alg);
    } catch (e) {
      out[alg] = `${e && e.name}: ${e && e.message}`;
    }
  }
  return c.json(out);
});

app.get("/node-tokens", async (c) => {
  const out = {};
  for (const [alg, { jwk, token }] of Object.entries(NODE_TOKENS)) {
    try {
      const { payload } = await jose.jwtVerify(token, await jose.importJWK(jwk, alg));
      out[alg] = payload.sub === "node" && payload.alg === alg ? "ok" : "wrong claims";
    } catch (e) {
      out[alg] = `${e && e.name}: ${e && e.message}`;
    }
  }
  return c.json(out);
});

app.get("/token", async (c) => {
  const sub = c.req.query("sub") ?? "anonymous";
  const token = await sign({ sub, exp: Math.floor(Date.now() / 1000) + 300 }, SECRET, "HS256");
  return c.json({ token });
});

app.use("/protected", jwt({ secret: SECRET, alg: "HS256" }));
app.get("/protected", (c) => c.json({ hello: c.get("jwtPayload").sub }));

export default app;
