//! The deployment files agree with each other and with the gateway: the configurations they
//! ship load, and ports, probes and grace periods match across the Dockerfile, compose,
//! Prometheus and Kubernetes files. (The image itself is built and run by
//! `scripts/container-ci`.)

use std::path::Path;

use muxgate::config::Config;

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("read {}: {e}", full.display()))
}

fn load(path: &str) -> Config {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    Config::load(Some(&full), std::iter::empty())
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .config
}

/// The first number after `key` in `text` (`EXPOSE 8767`, `containerPort: 8767`).
fn number_after(text: &str, key: &str) -> u64 {
    let re = regex::Regex::new(&format!(r"{}\s*(\d+)", regex::escape(key))).unwrap();
    re.captures(text)
        .unwrap_or_else(|| panic!("no `{key} <number>`"))[1]
        .parse()
        .unwrap()
}

#[test]
fn the_image_config_listens_where_the_dockerfile_says() {
    let config = load("deploy/container/config.toml");
    assert!(
        config.http.bind.ip().is_unspecified(),
        "reachable through a published port"
    );
    let dockerfile = read("Dockerfile");
    assert_eq!(
        number_after(&dockerfile, "EXPOSE"),
        u64::from(config.http.bind.port())
    );
    assert!(dockerfile.contains("ARG RUST_IMAGE=rust:1.95-bookworm"));
    assert!(dockerfile.contains("ARG RUNTIME_IMAGE=debian:bookworm-slim"));
    assert!(dockerfile.contains("cargo build --release --locked"));
    assert!(dockerfile.contains(r#"CMD ["muxgate", "healthcheck"]"#));
    assert!(
        dockerfile.contains("--shell /bin/bash"),
        "tmux panes need a real shell"
    );
    assert!(dockerfile.contains("USER muxgate"));
    assert!(dockerfile.contains("COPY deploy/container/config.toml /etc/muxgate/config.toml"));
    assert!(dockerfile.contains("MUXGATE_CONFIG=/etc/muxgate/config.toml"));
    assert!(
        !dockerfile.contains("COPY --link") && !dockerfile.contains("<<"),
        "stay within what older builders parse"
    );
    let ignored = read(".dockerignore");
    assert!(ignored.lines().any(|l| l.trim() == "target/"));
}

#[test]
fn compose_and_prometheus_address_the_gateway_port() {
    let config = load("deploy/container/config.toml");
    let port = config.http.bind.port();
    let compose = read("deploy/compose.yaml");
    assert!(
        compose.contains(&format!("127.0.0.1:{port}:{port}")),
        "published port"
    );
    let stop_grace = number_after(&compose, "stop_grace_period:");
    assert!(
        stop_grace > config.http.shutdown_grace_secs,
        "stop waits for the grace period"
    );
    let prometheus = read("deploy/prometheus/prometheus.yml");
    assert!(
        prometheus.contains(&format!("muxgate:{port}")),
        "{prometheus}"
    );
    let datasource = read("deploy/grafana/provisioning/datasources/prometheus.yaml");
    assert!(datasource.contains("uid: prometheus"));
    let dashboard: serde_json::Value =
        serde_json::from_str(&read("deploy/grafana/dashboards/muxgate.json")).unwrap();
    assert_eq!(dashboard["uid"], "muxgate");
}

#[test]
fn the_kubernetes_deployment_matches_its_config() {
    let config = load("deploy/kubernetes/config.toml");
    let port = u64::from(config.http.bind.port());
    let deployment = read("deploy/kubernetes/deployment.yaml");
    assert_eq!(number_after(&deployment, "containerPort:"), port);
    assert_eq!(number_after(&deployment, "runAsUser:"), 10001);
    assert!(
        number_after(&deployment, "terminationGracePeriodSeconds:")
            > config.http.shutdown_grace_secs + 5,
        "Kubernetes must not kill the pod before the shutdown sequence ends"
    );
    assert!(deployment.contains("path: /healthz") && deployment.contains("path: /readyz"));
    let secret_file = config
        .auth
        .secret_file
        .expect("the key comes from the Secret");
    let keys_mount = regex::Regex::new(r"name: keys\s+mountPath: (\S+)").unwrap();
    let mount = &keys_mount.captures(&deployment).expect("keys volume mount")[1];
    assert!(
        secret_file.starts_with(mount),
        "{} is not under the Secret mount {mount}",
        secret_file.display()
    );
    // The shipped key is a placeholder: an unedited deploy must not start with a public key.
    let secret = read("deploy/kubernetes/secret.yaml");
    let placeholder = regex::Regex::new(r#"hs256: "([^"]*)""#).unwrap();
    let value = &placeholder.captures(&secret).expect("the hs256 entry")[1];
    let refused =
        muxgate::auth::TokenVerifier::from_config(&muxgate::auth::AuthConfig::hs256(value))
            .expect_err("the placeholder key is refused");
    assert!(refused.to_string().contains("not random"), "{refused}");
    let kustomization = read("deploy/kubernetes/kustomization.yaml");
    for file in [
        "secret.yaml",
        "deployment.yaml",
        "service.yaml",
        "config.toml",
    ] {
        assert!(kustomization.contains(file), "{file} is applied");
    }
    let service = read("deploy/kubernetes/service.yaml");
    assert_eq!(number_after(&service, "port:"), port);
}
