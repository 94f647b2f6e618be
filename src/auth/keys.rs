//! Loading verification keys from `[auth]`: an HS256 secret, or public keys from PEM files and
//! a JWKS file. Every key is checked at load time (type, curve, RSA size) so a bad key stops
//! startup with a clear message instead of failing every request later.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};

use super::config::{AuthConfig, AuthConfigError, JwtAlgorithm};

/// Shortest HS256 secret accepted, in bytes.
pub(super) const MIN_SECRET_BYTES: usize = 32;
/// Smallest RSA modulus accepted, in bytes (2048 bits).
const MIN_RSA_MODULUS_BYTES: usize = 256;

/// One key a token may be verified with.
pub(crate) struct VerificationKey {
    /// Key id to match against the token header's `kid`.
    pub kid: Option<String>,
    /// The key.
    pub key: DecodingKey,
    /// For asymmetric keys, the public parameters (to match a signing key against).
    pub public: Option<AlgorithmParameters>,
}

/// All keys of the configured algorithm.
pub(crate) struct KeySet {
    pub algorithm: JwtAlgorithm,
    pub keys: Vec<VerificationKey>,
}

impl KeySet {
    /// Whether any key carries a `kid` (then tokens must name a known one).
    pub(crate) fn has_kids(&self) -> bool {
        self.keys.iter().any(|k| k.kid.is_some())
    }
}

pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, AuthConfigError> {
    std::fs::read(path).map_err(|source| AuthConfigError::Read {
        path: path.to_owned(),
        source,
    })
}

/// The HS256 secret bytes from `secret` or `secret_file`.
pub(crate) fn load_secret(cfg: &AuthConfig) -> Result<Vec<u8>, AuthConfigError> {
    let secret = match (&cfg.secret, &cfg.secret_file) {
        (Some(_), Some(_)) => {
            return Err(AuthConfigError::Conflict(
                "set either `secret` or `secret_file`, not both".into(),
            ));
        }
        (None, None) => {
            return Err(AuthConfigError::NoKey(
                "algorithm HS256 needs `auth.secret` or `auth.secret_file`".into(),
            ));
        }
        (Some(s), None) => s.expose().as_bytes().to_vec(),
        (None, Some(path)) => {
            let raw = read_file(path)?;
            String::from_utf8(raw)
                .map_err(|_| AuthConfigError::BadKey {
                    origin: path.display().to_string(),
                    reason: "the secret file is not UTF-8 text".into(),
                })?
                .trim()
                .as_bytes()
                .to_vec()
        }
    };
    if secret.len() < MIN_SECRET_BYTES {
        return Err(AuthConfigError::WeakSecret(secret.len()));
    }
    if let Some(why) = not_random(&secret) {
        return Err(AuthConfigError::GuessableSecret(why));
    }
    Ok(secret)
}

/// Words of the placeholders people ship and forget to replace (the lower-cased secret must
/// contain none of them).
const PLACEHOLDER_WORDS: &[&str] = &[
    "replace",
    "change-me",
    "changeme",
    "change_me",
    "example",
    "placeholder",
    "your-secret",
    "yoursecret",
    "insert",
    "todo",
    "xxxxxxxx",
    "secret-key",
    "password",
];

/// Why `secret` is obviously not random, if it is: a placeholder's words, few distinct bytes,
/// a short unit repeated, or little entropy per byte (random base64 has about 5.5 bits, hex
/// 3.9, an English phrase about 4, `aaaa…` none).
pub(super) fn not_random(secret: &[u8]) -> Option<&'static str> {
    let lower = secret.to_ascii_lowercase();
    if PLACEHOLDER_WORDS
        .iter()
        .any(|word| memchr::memmem::find(&lower, word.as_bytes()).is_some())
    {
        return Some("it reads like a placeholder");
    }
    let mut counts = [0usize; 256];
    for &byte in secret {
        counts[usize::from(byte)] += 1;
    }
    if counts.iter().filter(|&&n| n > 0).count() < 12 {
        return Some("it uses fewer than 12 distinct characters");
    }
    if (1..=16).any(|period| {
        period < secret.len() && secret.iter().skip(period).zip(secret).all(|(a, b)| a == b)
    }) {
        return Some("it repeats a short piece");
    }
    let len = secret.len() as f64;
    let bits: f64 = counts
        .iter()
        .filter(|&&n| n > 0)
        .map(|&n| {
            let p = n as f64 / len;
            -p * p.log2()
        })
        .sum();
    (bits < 3.0).then_some("its characters are too predictable")
}

/// Loads and checks every verification key the configuration names.
pub(crate) fn load_verification_keys(cfg: &AuthConfig) -> Result<KeySet, AuthConfigError> {
    let algorithm = cfg.algorithm;
    if algorithm.is_symmetric() {
        if !cfg.public_keys.is_empty() || cfg.jwks_file.is_some() || cfg.signing_key_file.is_some()
        {
            return Err(AuthConfigError::Conflict(
                "algorithm HS256 takes only `secret` or `secret_file`; remove `public_keys`, \
                 `jwks_file` and `signing_key_file` (or set `algorithm` to RS256, ES256 or EdDSA)"
                    .into(),
            ));
        }
        let secret = load_secret(cfg)?;
        return Ok(KeySet {
            algorithm,
            keys: vec![VerificationKey {
                kid: None,
                key: DecodingKey::from_secret(&secret),
                public: None,
            }],
        });
    }

    if cfg.secret.is_some() || cfg.secret_file.is_some() {
        return Err(AuthConfigError::Conflict(format!(
            "algorithm {algorithm} verifies with public keys; remove `secret`/`secret_file` \
             (a shared secret next to public keys invites algorithm confusion)"
        )));
    }

    let mut keys = Vec::new();
    for entry in &cfg.public_keys {
        let origin = entry.file.display().to_string();
        let pem = read_file(&entry.file)?;
        let key = decoding_key_from_pem(algorithm, &pem, &origin)?;
        let public = checked_public_params(algorithm, &key, &origin)?;
        keys.push(VerificationKey {
            kid: entry.kid.clone(),
            key,
            public: Some(public),
        });
    }
    if let Some(path) = &cfg.jwks_file {
        keys.extend(load_jwks(algorithm, path)?);
    }
    if keys.is_empty() {
        return Err(AuthConfigError::NoKey(format!(
            "algorithm {algorithm} needs `auth.public_keys` or an `auth.jwks_file` with a \
             usable {algorithm} key"
        )));
    }
    let mut kids: Vec<&str> = keys.iter().filter_map(|k| k.kid.as_deref()).collect();
    kids.sort_unstable();
    if let Some(dup) = kids.windows(2).find(|w| w[0] == w[1]) {
        return Err(AuthConfigError::Conflict(format!(
            "two keys share the kid `{}`",
            dup[0]
        )));
    }
    Ok(KeySet { algorithm, keys })
}

fn pem_labels(pem: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(pem)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("-----BEGIN "))
        .filter_map(|l| l.strip_suffix("-----"))
        .map(str::to_owned)
        .collect()
}

fn decoding_key_from_pem(
    algorithm: JwtAlgorithm,
    pem: &[u8],
    origin: &str,
) -> Result<DecodingKey, AuthConfigError> {
    let bad = |reason: String| AuthConfigError::BadKey {
        origin: origin.to_owned(),
        reason,
    };
    let labels = pem_labels(pem);
    match labels.as_slice() {
        [label] if label == "PUBLIC KEY" || label == "RSA PUBLIC KEY" => {}
        [label] if label.contains("PRIVATE KEY") => {
            return Err(bad(
                "this is a private key; configure the public key here (and the private key, \
                 if needed, as `signing_key_file`)"
                    .into(),
            ));
        }
        _ => return Err(bad("expected exactly one PEM `PUBLIC KEY` block".into())),
    }
    let parsed = match algorithm {
        JwtAlgorithm::RS256 => DecodingKey::from_rsa_pem(pem),
        JwtAlgorithm::ES256 => DecodingKey::from_ec_pem(pem),
        JwtAlgorithm::EdDSA => DecodingKey::from_ed_pem(pem),
        JwtAlgorithm::HS256 => return Err(bad("HS256 uses a shared secret, not a PEM key".into())),
    };
    parsed.map_err(|e| bad(format!("not a {algorithm} public key ({e})")))
}

/// Extracts the public parameters of a key and checks they suit the algorithm.
fn checked_public_params(
    algorithm: JwtAlgorithm,
    key: &DecodingKey,
    origin: &str,
) -> Result<AlgorithmParameters, AuthConfigError> {
    let bad = |reason: String| AuthConfigError::BadKey {
        origin: origin.to_owned(),
        reason,
    };
    let jwk = Jwk::from_decoding_key(key, Some(algorithm.to_jsonwebtoken()))
        .map_err(|e| bad(format!("not a usable {algorithm} key ({e})")))?;
    check_params(algorithm, &jwk.algorithm).map_err(bad)?;
    Ok(jwk.algorithm)
}

fn check_params(algorithm: JwtAlgorithm, params: &AlgorithmParameters) -> Result<(), String> {
    match (algorithm, params) {
        (JwtAlgorithm::RS256, AlgorithmParameters::RSA(rsa)) => {
            let n = URL_SAFE_NO_PAD
                .decode(rsa.n.trim_end_matches('='))
                .map_err(|_| "RSA modulus is not base64url".to_owned())?;
            let significant = n.iter().skip_while(|b| **b == 0).count();
            if significant < MIN_RSA_MODULUS_BYTES {
                return Err(format!(
                    "RSA key has {} bits; at least 2048 are required",
                    significant * 8
                ));
            }
            Ok(())
        }
        (JwtAlgorithm::ES256, AlgorithmParameters::EllipticCurve(ec)) => {
            if ec.curve == EllipticCurve::P256 {
                Ok(())
            } else {
                Err(format!(
                    "ES256 needs a P-256 key, this one is {:?}",
                    ec.curve
                ))
            }
        }
        (JwtAlgorithm::EdDSA, AlgorithmParameters::OctetKeyPair(okp)) => {
            if okp.curve == EllipticCurve::Ed25519 {
                Ok(())
            } else {
                Err(format!(
                    "EdDSA needs an Ed25519 key, this one is {:?}",
                    okp.curve
                ))
            }
        }
        _ => Err(format!("the key type does not fit {algorithm}")),
    }
}

fn load_jwks(
    algorithm: JwtAlgorithm,
    path: &Path,
) -> Result<Vec<VerificationKey>, AuthConfigError> {
    let origin = path.display().to_string();
    let raw = read_file(path)?;
    // Entries are parsed one by one so that an exotic key elsewhere in an identity
    // provider's set does not make the whole set unusable.
    #[derive(serde::Deserialize)]
    struct RawSet {
        keys: Vec<serde_json::Value>,
    }
    let set: RawSet = serde_json::from_slice(&raw).map_err(|e| AuthConfigError::BadKey {
        origin: origin.clone(),
        reason: format!("not a JWKS document ({e})"),
    })?;
    let mut keys = Vec::new();
    for (index, value) in set.keys.into_iter().enumerate() {
        let entry_origin = format!("{origin} (key #{index})");
        let Ok(jwk) = serde_json::from_value::<Jwk>(value) else {
            tracing::warn!(origin = %entry_origin, "skipping a JWKS entry that cannot be parsed");
            continue;
        };
        if !jwk_fits(algorithm, &jwk) {
            tracing::debug!(origin = %entry_origin, %algorithm, "skipping a JWKS entry of another algorithm or use");
            continue;
        }
        let key = DecodingKey::from_jwk(&jwk).map_err(|e| AuthConfigError::BadKey {
            origin: entry_origin.clone(),
            reason: e.to_string(),
        })?;
        let public = checked_public_params(algorithm, &key, &entry_origin)?;
        keys.push(VerificationKey {
            kid: jwk.common.key_id.clone(),
            key,
            public: Some(public),
        });
    }
    Ok(keys)
}

/// Whether a JWKS entry is a signature key for the configured algorithm.
fn jwk_fits(algorithm: JwtAlgorithm, jwk: &Jwk) -> bool {
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return false;
    }
    let wanted = match algorithm {
        JwtAlgorithm::HS256 => KeyAlgorithm::HS256,
        JwtAlgorithm::RS256 => KeyAlgorithm::RS256,
        JwtAlgorithm::ES256 => KeyAlgorithm::ES256,
        JwtAlgorithm::EdDSA => KeyAlgorithm::EdDSA,
    };
    if jwk.common.key_algorithm.is_some_and(|a| a != wanted) {
        return false;
    }
    match (&jwk.algorithm, algorithm) {
        (AlgorithmParameters::RSA(_), JwtAlgorithm::RS256) => true,
        (AlgorithmParameters::EllipticCurve(ec), JwtAlgorithm::ES256) => {
            ec.curve == EllipticCurve::P256
        }
        (AlgorithmParameters::OctetKeyPair(okp), JwtAlgorithm::EdDSA) => {
            okp.curve == EllipticCurve::Ed25519
        }
        _ => false,
    }
}

#[cfg(test)]
pub(crate) mod test_keys {
    //! The checked-in test key pairs, and configs that name them.
    use std::path::PathBuf;

    use crate::auth::config::{AuthConfig, JwtAlgorithm, PublicKeyConfig};

    pub(crate) fn path(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/keys")
            .join(name)
    }

    /// A config of `algorithm` whose public keys are the test key `files`, each with its kid.
    pub(crate) fn asym(algorithm: JwtAlgorithm, files: &[(&str, Option<&str>)]) -> AuthConfig {
        AuthConfig {
            algorithm,
            public_keys: files
                .iter()
                .map(|(f, kid)| PublicKeyConfig {
                    file: path(f),
                    kid: kid.map(str::to_owned),
                })
                .collect(),
            ..AuthConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_keys::{asym, path};
    use super::*;
    use crate::auth::config::SecretString;

    /// A secret as `muxgate token` would generate it.
    const RANDOM_LOOKING: &str = "Xk3v9Qz1Lr7Tw2Hn8Bc5Mp0Jd4Fs6GaE";

    #[test]
    fn placeholders_and_guessable_secrets_are_refused() {
        for guessable in [
            "REPLACE-ME-with-at-least-32-random-bytes-of-key-material",
            "changeme-changeme-changeme-changeme!",
            &"a".repeat(48),
            &"0123456789ab".repeat(4),
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabcdefghijkl",
        ] {
            let config = AuthConfig::hs256(guessable);
            assert!(
                matches!(
                    load_secret(&config),
                    Err(AuthConfigError::GuessableSecret(_))
                ),
                "{guessable:?} was accepted"
            );
        }
        for random in [
            crate::auth::generate_secret(),
            hex::encode(rand::random::<[u8; 32]>()),
            "correct horse battery staple uphill violin".to_owned(),
        ] {
            assert_eq!(
                not_random(random.as_bytes()),
                None,
                "{random:?} was refused"
            );
        }
    }

    fn err_text(cfg: &AuthConfig) -> String {
        match load_verification_keys(cfg) {
            Ok(_) => panic!("expected a configuration error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn hs256_secret_rules() {
        let ok = AuthConfig::hs256(RANDOM_LOOKING);
        assert_eq!(load_verification_keys(&ok).unwrap().keys.len(), 1);
        assert!(err_text(&AuthConfig::hs256("short")).contains("5 bytes"));
        assert!(err_text(&AuthConfig::default()).contains("needs `auth.secret`"));
        let mut both = AuthConfig::hs256(RANDOM_LOOKING);
        both.secret_file = Some(path("nope"));
        assert!(err_text(&both).contains("not both"));
        let mut mixed = AuthConfig::hs256(RANDOM_LOOKING);
        mixed.public_keys = asym(JwtAlgorithm::RS256, &[("rsa_a.pub.pem", None)]).public_keys;
        assert!(err_text(&mixed).contains("takes only `secret`"));
    }

    #[test]
    fn secret_file_is_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("secret");
        std::fs::write(&file, format!("{RANDOM_LOOKING}\n")).unwrap();
        let cfg = AuthConfig {
            secret_file: Some(file),
            ..AuthConfig::default()
        };
        assert_eq!(load_secret(&cfg).unwrap(), RANDOM_LOOKING.as_bytes());
    }

    #[test]
    fn each_asymmetric_algorithm_loads_its_pem() {
        for (alg, file) in [
            (JwtAlgorithm::RS256, "rsa_a.pub.pem"),
            (JwtAlgorithm::ES256, "ec_a.pub.pem"),
            (JwtAlgorithm::EdDSA, "ed_a.pub.pem"),
        ] {
            let set = load_verification_keys(&asym(alg, &[(file, Some("k"))])).unwrap();
            assert_eq!(set.keys.len(), 1, "{alg}");
            assert!(set.has_kids());
        }
    }

    #[test]
    fn unsuitable_keys_are_refused_at_load() {
        let text = err_text(&asym(JwtAlgorithm::RS256, &[("rsa_1024.pub.pem", None)]));
        assert!(text.contains("1024 bits"), "{text}");
        let text = err_text(&asym(JwtAlgorithm::ES256, &[("ec_p384.pub.pem", None)]));
        assert!(text.contains("P-256"), "{text}");
        let text = err_text(&asym(JwtAlgorithm::RS256, &[("ec_a.pub.pem", None)]));
        assert!(text.contains("not a RS256 public key"), "{text}");
        let text = err_text(&asym(JwtAlgorithm::EdDSA, &[("ed_a.key.pem", None)]));
        assert!(text.contains("private key"), "{text}");
        let text = err_text(&asym(
            JwtAlgorithm::ES256,
            &[("ec_a.pub.pem", Some("k")), ("ec_b.pub.pem", Some("k"))],
        ));
        assert!(text.contains("share the kid `k`"), "{text}");
        let mut with_secret = asym(JwtAlgorithm::ES256, &[("ec_a.pub.pem", None)]);
        with_secret.secret = Some(SecretString::new("x".repeat(40)));
        assert!(err_text(&with_secret).contains("algorithm confusion"));
        assert!(err_text(&asym(JwtAlgorithm::EdDSA, &[])).contains("needs `auth.public_keys`"));
        let text = err_text(&asym(JwtAlgorithm::EdDSA, &[("missing.pem", None)]));
        assert!(text.contains("cannot read"), "{text}");
    }

    #[test]
    fn jwks_keeps_only_fitting_signature_keys() {
        let dir = tempfile::tempdir().unwrap();
        let ec =
            jsonwebtoken::EncodingKey::from_ec_pem(&std::fs::read(path("ec_a.key.pem")).unwrap())
                .unwrap();
        let mut ec_jwk = Jwk::from_encoding_key(&ec, jsonwebtoken::Algorithm::ES256).unwrap();
        ec_jwk.common.key_id = Some("ec-a".into());
        let mut enc = ec_jwk.clone();
        enc.common.key_id = Some("enc".into());
        enc.common.public_key_use = Some(PublicKeyUse::Encryption);
        let rsa =
            jsonwebtoken::EncodingKey::from_rsa_pem(&std::fs::read(path("rsa_a.key.pem")).unwrap())
                .unwrap();
        let rsa_jwk = Jwk::from_encoding_key(&rsa, jsonwebtoken::Algorithm::RS256).unwrap();
        let doc = serde_json::json!({ "keys": [
            ec_jwk, enc, rsa_jwk,
            { "kty": "EC", "crv": "secp256k1", "x": "AA", "y": "AA" },
            { "kty": "oct", "k": "c2VjcmV0" }
        ]});
        let file = dir.path().join("jwks.json");
        std::fs::write(&file, doc.to_string()).unwrap();
        let cfg = AuthConfig {
            algorithm: JwtAlgorithm::ES256,
            jwks_file: Some(file.clone()),
            ..AuthConfig::default()
        };
        let set = load_verification_keys(&cfg).unwrap();
        assert_eq!(set.keys.len(), 1);
        assert_eq!(set.keys[0].kid.as_deref(), Some("ec-a"));

        let cfg = AuthConfig {
            algorithm: JwtAlgorithm::EdDSA,
            jwks_file: Some(file),
            ..AuthConfig::default()
        };
        assert!(err_text(&cfg).contains("usable EdDSA key"));
    }
}
