//! The deployment files (`deploy/`, `scripts/local-cluster.sh`) agree with each other and with what
//! the cluster needs — what a user would otherwise find out with Docker or Kubernetes at hand:
//!
//! - `deploy/compose.yaml` parses; Redis runs with AOF and without eviction on a volume; every sleuth
//!   service's `--metrics-addr` port is a target of `deploy/prometheus.yml` (and every target is a
//!   service); the workers find the coordinator where it listens; Grafana mounts the provisioning
//!   files where they say they are; the token comes from the environment, never a literal.
//! - `deploy/k8s/*.yaml` parse; the workers are a Deployment (so `kubectl scale` works) with resource
//!   requests, probes and scrape annotations on their metrics port; Redis is a StatefulSet with AOF on
//!   a volume claim; every Service selects pods that exist; the token comes from a Secret that no
//!   applied file holds (its template is not `*.yaml`).
//! - `scripts/local-cluster.sh` passes `bash -n` (and shellcheck where it is installed).
//! - `deploy/Dockerfile` and `.dockerignore` have the parts the docs promise.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_norway::Value;

fn file(rel: &str) -> PathBuf {
    common::crate_file(rel)
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(file(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

/// One YAML document, merge keys (`<<: *anchor`) applied as compose applies them.
fn yaml(rel: &str) -> Value {
    let mut v: Value =
        serde_norway::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel} is not YAML: {e}"));
    v.apply_merge()
        .unwrap_or_else(|e| panic!("{rel}: merge keys: {e}"));
    v
}

/// Every document of a multi-document YAML file (empty documents left out).
fn yaml_documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_norway::Deserializer::from_str(&text)
        .map(|doc| {
            Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()))
        })
        .filter(|v| !v.is_null())
        .collect()
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// A list of strings (`command`, `args`), or a string split on whitespace.
fn words(v: &Value) -> Vec<String> {
    match v {
        Value::Sequence(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => s.clone(),
                other => serde_norway::to_string(other)
                    .unwrap_or_default()
                    .trim()
                    .to_string(),
            })
            .collect(),
        Value::String(s) => s.split_whitespace().map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

/// The value after `flag` in an argument list.
fn flag<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// The port of `HOST:PORT` (or `URL` ending in one).
fn port_of(addr: &str) -> u16 {
    addr.trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in `{addr}`"))
}

/// `host` and `port` of `http://host:port`.
fn host_port(url: &str) -> (String, u16) {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .unwrap_or_else(|| panic!("`{url}` is not an http(s) URL"));
    let rest = rest.trim_end_matches('/');
    let (host, port) = rest
        .rsplit_once(':')
        .unwrap_or_else(|| panic!("`{url}` has no port"));
    (host.to_string(), port.parse().expect("a port"))
}

// ------------------------------------------------------------------------------------------------
// docker compose

/// The compose file's services that run sleuth, with their role (`coordinator` or `worker`) and
/// their arguments.
fn sleuth_services(compose: &Value) -> BTreeMap<String, (String, Vec<String>)> {
    let mut out = BTreeMap::new();
    for (name, svc) in compose["services"].as_mapping().expect("services") {
        let args = words(&svc["command"]);
        let image = s(&svc["image"]);
        if image.contains("sleuth") || !svc["build"].is_null() {
            let role = args.first().cloned().unwrap_or_default();
            out.insert(s(name).to_string(), (role, args));
        }
    }
    out
}

/// `environment` of a service as a map (compose accepts a mapping or a list of `K=V`).
fn environment(svc: &Value) -> BTreeMap<String, String> {
    match &svc["environment"] {
        Value::Mapping(m) => m
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => serde_norway::to_string(other)
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                };
                (s(k).to_string(), v)
            })
            .collect(),
        Value::Sequence(items) => items
            .iter()
            .filter_map(|i| i.as_str()?.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// The `targets` of every static config of `deploy/prometheus.yml`.
fn prometheus_targets(config: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for job in config["scrape_configs"]
        .as_sequence()
        .expect("scrape_configs")
    {
        for sc in job["static_configs"].as_sequence().into_iter().flatten() {
            for t in sc["targets"].as_sequence().into_iter().flatten() {
                out.insert(s(t).to_string());
            }
        }
    }
    out
}

#[test]
fn compose_runs_a_coordinator_and_workers_that_prometheus_scrapes() {
    let compose = yaml("deploy/compose.yaml");
    let services = sleuth_services(&compose);
    let roles: Vec<&str> = services.values().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        roles.iter().filter(|r| **r == "coordinator").count(),
        1,
        "one coordinator: {services:?}"
    );
    assert!(
        roles.iter().filter(|r| **r == "worker").count() >= 2,
        "two workers or more: {services:?}"
    );

    let targets = prometheus_targets(&yaml("deploy/prometheus.yml"));
    let mut scraped = BTreeSet::new();
    for (name, (role, args)) in &services {
        let addr = flag(args, "--metrics-addr")
            .unwrap_or_else(|| panic!("service {name} ({role}) has no --metrics-addr: {args:?}"));
        assert!(
            addr.starts_with("0.0.0.0:"),
            "{name}: --metrics-addr {addr} must listen on every interface for Prometheus to reach it"
        );
        let target = format!("{name}:{}", port_of(addr));
        assert!(
            targets.contains(&target),
            "{name}'s metrics ({target}) are not a target of deploy/prometheus.yml: {targets:?}"
        );
        scraped.insert(target);
    }
    let stray: Vec<_> = targets.difference(&scraped).collect();
    assert!(
        stray.is_empty(),
        "deploy/prometheus.yml scrapes targets no sleuth service serves: {stray:?}"
    );

    // The workers reach the coordinator where it listens.
    let (coordinator, (_, coord_args)) = services
        .iter()
        .find(|(_, (r, _))| r == "coordinator")
        .expect("a coordinator");
    let listen = flag(coord_args, "--listen").expect("the coordinator's --listen");
    assert!(
        listen.starts_with("0.0.0.0:"),
        "--listen {listen}: workers in other containers must reach it"
    );
    for (name, (role, args)) in &services {
        if role != "worker" {
            continue;
        }
        let svc = &compose["services"][name.as_str()];
        let url = flag(args, "--coordinator")
            .map(str::to_string)
            .or_else(|| environment(svc).get("SLEUTH_COORDINATOR").cloned())
            .unwrap_or_else(|| panic!("worker {name} names no coordinator"));
        assert_eq!(
            host_port(&url),
            (coordinator.clone(), port_of(listen)),
            "worker {name}"
        );
        assert!(
            flag(args, "--capacity").is_some(),
            "worker {name} has no --capacity"
        );
    }
}

#[test]
fn compose_redis_is_durable_and_never_evicts() {
    let compose = yaml("deploy/compose.yaml");
    let redis = &compose["services"]["redis"];
    assert!(
        s(&redis["image"]).starts_with("redis:7"),
        "Redis 7: {:?}",
        redis["image"]
    );
    let args = words(&redis["command"]);
    assert_eq!(flag(&args, "--appendonly"), Some("yes"), "{args:?}");
    assert_eq!(flag(&args, "--appendfsync"), Some("everysec"), "{args:?}");
    assert_eq!(
        flag(&args, "--maxmemory-policy"),
        Some("noeviction"),
        "{args:?}"
    );
    let volumes = words(&redis["volumes"]);
    let data = volumes
        .iter()
        .find(|v| v.ends_with(":/data"))
        .unwrap_or_else(|| panic!("Redis keeps /data on a volume: {volumes:?}"));
    let volume = data.trim_end_matches(":/data");
    assert!(
        compose["volumes"].get(volume).is_some(),
        "{volume} is a named volume of the compose file"
    );
    // Every sleuth service talks to this Redis.
    for (name, _) in sleuth_services(&compose) {
        let env = environment(&compose["services"][name.as_str()]);
        let url = env
            .get("SLEUTH_REDIS")
            .unwrap_or_else(|| panic!("{name}: no SLEUTH_REDIS"));
        assert!(url.starts_with("redis://redis:6379"), "{name}: {url}");
    }
}

#[test]
fn compose_takes_the_token_from_the_environment_only() {
    let compose = yaml("deploy/compose.yaml");
    let text = read("deploy/compose.yaml");
    for (name, _) in sleuth_services(&compose) {
        let env = environment(&compose["services"][name.as_str()]);
        let token = env
            .get("SLEUTH_TOKEN")
            .unwrap_or_else(|| panic!("{name} gets no SLEUTH_TOKEN"));
        assert!(
            token.starts_with("${SLEUTH_TOKEN:?") && token.ends_with('}'),
            "{name}: SLEUTH_TOKEN must be `${{SLEUTH_TOKEN:?…}}` (required, from the environment), not `{token}`"
        );
    }
    // No token on a command line, nor any literal that looks like a generated secret.
    assert!(
        !text.contains("--token"),
        "a token travels in the environment, never as a flag"
    );
    for word in text.split(|c: char| !c.is_ascii_alphanumeric()) {
        assert!(
            !(word.len() >= 32 && word.chars().all(|c| c.is_ascii_hexdigit())),
            "deploy/compose.yaml holds what looks like a secret: {word}"
        );
    }
    assert!(
        read("deploy/.gitignore")
            .lines()
            .any(|l| l.trim() == ".env"),
        "deploy/.gitignore keeps deploy/.env (the token) out of commits"
    );
    assert!(
        !file("deploy/.env").exists() || {
            // A developer's own .env is fine as long as git does not track it.
            let out = Command::new("git")
                .args(["ls-files", "--error-unmatch", "deploy/.env"])
                .current_dir(common::crate_file(""))
                .output();
            out.map(|o| !o.status.success()).unwrap_or(true)
        },
        "deploy/.env is tracked by git"
    );
}

#[test]
fn compose_grafana_mounts_the_provisioning_and_the_datasource_is_prometheus() {
    let compose = yaml("deploy/compose.yaml");
    let grafana = &compose["services"]["grafana"];
    let volumes = words(&grafana["volumes"]);
    let mounted = |from: &str, to: &str| {
        volumes
            .iter()
            .any(|v| v.starts_with(&format!("{from}:{to}")))
    };
    for (from, to) in [
        (
            "../grafana/provisioning/datasources",
            "/etc/grafana/provisioning/datasources",
        ),
        (
            "../grafana/provisioning/dashboards",
            "/etc/grafana/provisioning/dashboards",
        ),
        ("../grafana/dashboards", "/var/lib/grafana/dashboards"),
    ] {
        assert!(
            mounted(from, to),
            "grafana mounts {from} at {to}: {volumes:?}"
        );
        assert!(
            file("deploy").join(from).is_dir(),
            "{from} (relative to deploy/) exists"
        );
    }
    // The provider loads from the dashboards mount; the datasource is this compose file's
    // Prometheus, under the uid the dashboards name.
    let provider = yaml("grafana/provisioning/dashboards/sleuth.yaml");
    assert_eq!(
        s(&provider["providers"][0]["options"]["path"]),
        "/var/lib/grafana/dashboards"
    );
    let ds = yaml("grafana/provisioning/datasources/prometheus.yaml");
    let ds = &ds["datasources"][0];
    assert_eq!(s(&ds["uid"]), "sleuth-prometheus");
    let (host, port) = host_port(s(&ds["url"]));
    assert!(
        compose["services"].get(host.as_str()).is_some(),
        "the datasource's host {host} is a compose service"
    );
    assert_eq!(port, 9090);
    let prom_volumes = words(&compose["services"][host.as_str()]["volumes"]);
    assert!(
        prom_volumes
            .iter()
            .any(|v| v.starts_with("./prometheus.yml:/etc/prometheus/prometheus.yml")),
        "Prometheus reads deploy/prometheus.yml: {prom_volumes:?}"
    );
    // Every dashboard file is valid JSON with the datasource uid (tests/dashboards.rs checks the rest).
    for entry in std::fs::read_dir(file("grafana/dashboards")).expect("dashboards") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read a dashboard");
        assert!(
            text.contains("sleuth-prometheus"),
            "{} uses the provisioned datasource",
            path.display()
        );
    }
}

// ------------------------------------------------------------------------------------------------
// Kubernetes

/// Every object of `deploy/k8s/*.yaml`, with the file it is in.
fn k8s_objects() -> Vec<(String, Value)> {
    let dir = file("deploy/k8s");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("deploy/k8s")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for p in paths {
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        for doc in yaml_documents(&p) {
            assert!(
                !s(&doc["apiVersion"]).is_empty() && !s(&doc["kind"]).is_empty(),
                "{name}: an object without apiVersion or kind"
            );
            assert!(
                !s(&doc["metadata"]["name"]).is_empty(),
                "{name}: a {} without a name",
                s(&doc["kind"])
            );
            out.push((name.clone(), doc));
        }
    }
    assert!(!out.is_empty(), "no objects in deploy/k8s/*.yaml");
    out
}

fn object<'a>(objects: &'a [(String, Value)], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .map(|(_, o)| o)
        .find(|o| s(&o["kind"]) == kind && s(&o["metadata"]["name"]) == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in deploy/k8s/"))
}

fn container(workload: &Value) -> &Value {
    &workload["spec"]["template"]["spec"]["containers"][0]
}

fn env_of(c: &Value) -> BTreeMap<String, Value> {
    c["env"]
        .as_sequence()
        .into_iter()
        .flatten()
        .map(|e| (s(&e["name"]).to_string(), e.clone()))
        .collect()
}

#[test]
fn k8s_manifests_parse_and_are_namespaced() {
    let objects = k8s_objects();
    let ns = object(&objects, "Namespace", "sleuth");
    assert_eq!(s(&ns["apiVersion"]), "v1");
    let first = &objects[0].1;
    assert_eq!(
        s(&first["kind"]),
        "Namespace",
        "the namespace comes first (kubectl applies files in name order)"
    );
    for (file, o) in &objects {
        let kind = s(&o["kind"]);
        if kind != "Namespace" {
            assert_eq!(
                s(&o["metadata"]["namespace"]),
                "sleuth",
                "{file}: {kind} {} is in the sleuth namespace",
                s(&o["metadata"]["name"])
            );
        }
        assert_ne!(
            kind, "Secret",
            "{file}: no Secret in an applied file (the token's template is secret.yaml.template)"
        );
    }
}

#[test]
fn k8s_workers_are_a_scalable_deployment_with_probes_requests_and_scrape_annotations() {
    let objects = k8s_objects();
    let workers = object(&objects, "Deployment", "sleuth-worker");
    assert!(
        workers["spec"]["replicas"].as_u64().unwrap_or(0) >= 2,
        "two workers to start with"
    );
    let c = container(workers);
    let args = words(&c["args"]);
    assert_eq!(args.first().map(String::as_str), Some("worker"), "{args:?}");
    assert!(flag(&args, "--capacity").is_some(), "{args:?}");
    let metrics = flag(&args, "--metrics-addr").expect("--metrics-addr");
    assert!(metrics.starts_with("0.0.0.0:"), "{metrics}");
    let port = port_of(metrics);
    let annotations = &workers["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(s(&annotations["prometheus.io/scrape"]), "true");
    assert_eq!(s(&annotations["prometheus.io/port"]), port.to_string());
    assert!(
        c["ports"]
            .as_sequence()
            .into_iter()
            .flatten()
            .any(|p| p["containerPort"].as_u64() == Some(u64::from(port))),
        "the worker's container declares its metrics port {port}"
    );
    for res in ["cpu", "memory"] {
        assert!(
            !c["resources"]["requests"][res].is_null(),
            "the workers request {res}"
        );
    }
    assert!(
        !c["livenessProbe"].is_null(),
        "the workers have a liveness probe"
    );

    // They find the coordinator's Service and Redis' Service by name.
    let env = env_of(c);
    let coord_url = s(&env["SLEUTH_COORDINATOR"]["value"]).to_string();
    let (host, p) = host_port(&coord_url);
    let svc = object(&objects, "Service", &host);
    assert!(
        svc["spec"]["ports"]
            .as_sequence()
            .into_iter()
            .flatten()
            .any(|sp| sp["port"].as_u64() == Some(u64::from(p))),
        "Service {host} has port {p}"
    );
    let redis_url = s(&env["SLEUTH_REDIS"]["value"]);
    let redis_host = redis_url
        .trim_start_matches("redis://")
        .split([':', '/'])
        .next()
        .unwrap_or("");
    object(&objects, "Service", redis_host);
}

#[test]
fn k8s_coordinator_is_one_replica_with_grpc_health_and_the_token_from_a_secret() {
    let objects = k8s_objects();
    let coord = object(&objects, "Deployment", "sleuth-coordinator");
    assert_eq!(coord["spec"]["replicas"].as_u64(), Some(1));
    assert_eq!(s(&coord["spec"]["strategy"]["type"]), "Recreate");
    let c = container(coord);
    let args = words(&c["args"]);
    assert_eq!(args.first().map(String::as_str), Some("coordinator"));
    let listen = port_of(flag(&args, "--listen").expect("--listen"));
    let metrics = port_of(flag(&args, "--metrics-addr").expect("--metrics-addr"));
    let annotations = &coord["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(s(&annotations["prometheus.io/port"]), metrics.to_string());
    assert_eq!(
        c["livenessProbe"]["grpc"]["port"].as_u64(),
        Some(u64::from(listen)),
        "liveness through grpc.health.v1 on the API port"
    );

    // Every sleuth container gets the token from the Secret the template describes.
    let template = read("deploy/k8s/secret.yaml.template");
    let secret: Value = serde_norway::from_str(&template).expect("the Secret template is YAML");
    assert_eq!(s(&secret["kind"]), "Secret");
    let secret_name = s(&secret["metadata"]["name"]);
    let value = s(&secret["stringData"]["token"]);
    assert!(
        value.chars().all(|c| c.is_ascii_uppercase() || c == '_'),
        "the template holds a placeholder, not a token: {value}"
    );
    for name in ["sleuth-coordinator", "sleuth-worker"] {
        let env = env_of(container(object(&objects, "Deployment", name)));
        let from = &env["SLEUTH_TOKEN"]["valueFrom"]["secretKeyRef"];
        assert_eq!(s(&from["name"]), secret_name, "{name}");
        assert_eq!(s(&from["key"]), "token", "{name}");
        assert!(
            env["SLEUTH_TOKEN"]["value"].is_null(),
            "{name}: no literal token"
        );
    }
}

#[test]
fn k8s_redis_is_a_statefulset_with_aof_on_a_volume_claim() {
    let objects = k8s_objects();
    let redis = object(&objects, "StatefulSet", "sleuth-redis");
    let args = words(&container(redis)["args"]);
    assert_eq!(flag(&args, "--appendonly"), Some("yes"), "{args:?}");
    assert_eq!(
        flag(&args, "--maxmemory-policy"),
        Some("noeviction"),
        "{args:?}"
    );
    let claims = redis["spec"]["volumeClaimTemplates"]
        .as_sequence()
        .expect("a volume claim template");
    let claim = s(&claims[0]["metadata"]["name"]);
    let dir = flag(&args, "--dir").unwrap_or("/data");
    assert!(
        container(redis)["volumeMounts"]
            .as_sequence()
            .into_iter()
            .flatten()
            .any(|m| s(&m["name"]) == claim && s(&m["mountPath"]) == dir),
        "the claim {claim} is mounted at Redis' dir {dir}"
    );
}

#[test]
fn k8s_services_select_pods_that_exist() {
    let objects = k8s_objects();
    let pod_labels: Vec<(&str, &Value)> = objects
        .iter()
        .filter(|(_, o)| ["Deployment", "StatefulSet"].contains(&s(&o["kind"])))
        .map(|(_, o)| {
            let labels = &o["spec"]["template"]["metadata"]["labels"];
            // The workload's own selector matches its pods.
            for (k, v) in o["spec"]["selector"]["matchLabels"]
                .as_mapping()
                .expect("matchLabels")
            {
                assert_eq!(&labels[s(k)], v, "{}", s(&o["metadata"]["name"]));
            }
            (s(&o["metadata"]["name"]), labels)
        })
        .collect();
    for (file, svc) in objects.iter().filter(|(_, o)| s(&o["kind"]) == "Service") {
        let selector = svc["spec"]["selector"].as_mapping().expect("a selector");
        let selected: Vec<&str> = pod_labels
            .iter()
            .filter(|(_, labels)| selector.iter().all(|(k, v)| &labels[s(k)] == v))
            .map(|(n, _)| *n)
            .collect();
        assert!(
            !selected.is_empty(),
            "{file}: Service {} selects no pods",
            s(&svc["metadata"]["name"])
        );
    }
}

#[test]
fn k8s_prometheus_config_keeps_the_annotated_pods() {
    let objects = k8s_objects();
    let cm = object(&objects, "ConfigMap", "sleuth-prometheus-config");
    let config: Value =
        serde_norway::from_str(s(&cm["data"]["prometheus.yml"])).expect("prometheus.yml is YAML");
    let job = &config["scrape_configs"][0];
    assert_eq!(s(&job["kubernetes_sd_configs"][0]["role"]), "pod");
    let relabels = serde_norway::to_string(&job["relabel_configs"]).expect("relabel_configs");
    assert!(relabels.contains("__meta_kubernetes_pod_annotation_prometheus_io_scrape"));
    assert!(relabels.contains("__meta_kubernetes_pod_annotation_prometheus_io_port"));
}

// ------------------------------------------------------------------------------------------------
// The image and the local cluster

#[test]
fn dockerfile_builds_locked_and_runs_sleuth_as_a_non_root_user() {
    let text = read("deploy/Dockerfile");
    assert!(
        text.contains("cargo build --release --locked"),
        "locked release build"
    );
    assert!(
        text.lines().filter(|l| l.starts_with("FROM ")).count() >= 2,
        "multi-stage"
    );
    assert!(text.contains("ca-certificates"));
    let user = text
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("a USER");
    assert!(
        !user.trim().starts_with("root") && !user.trim().starts_with('0'),
        "USER {user}"
    );
    let entry = text
        .lines()
        .find_map(|l| l.strip_prefix("ENTRYPOINT "))
        .expect("an ENTRYPOINT");
    assert!(entry.contains("sleuth"), "ENTRYPOINT {entry}");
    assert!(
        !text.contains("protoc") || text.contains("protoc-bin-vendored"),
        "the build installs no protoc"
    );

    let ignore: BTreeSet<String> = read(".dockerignore")
        .lines()
        .map(|l| l.trim().trim_end_matches('/').to_string())
        .collect();
    for dir in ["target", "runs", ".git"] {
        assert!(ignore.contains(dir), ".dockerignore leaves out {dir}/");
    }
    // The compose file builds with this Dockerfile from the repository root.
    let compose = yaml("deploy/compose.yaml");
    for (name, _) in sleuth_services(&compose) {
        let build = &compose["services"][name.as_str()]["build"];
        if !build.is_null() {
            assert_eq!(s(&build["context"]), "..", "{name}");
            assert_eq!(s(&build["dockerfile"]), "deploy/Dockerfile", "{name}");
        }
    }
}

#[test]
fn local_cluster_script_is_valid_bash() {
    let script = file("scripts/local-cluster.sh");
    let out = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .expect("run bash -n");
    assert!(
        out.status.success(),
        "bash -n scripts/local-cluster.sh:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = read("scripts/local-cluster.sh");
    for (what, needle) in [
        ("AOF", "appendonly yes"),
        ("no eviction", "maxmemory-policy noeviction"),
        ("the env file", "${STATE}/env"),
        ("stopping from pid files", ".pid"),
    ] {
        assert!(text.contains(needle), "local-cluster.sh: {what} ({needle})");
    }
    for cmd in ["up)", "down)", "status)"] {
        assert!(text.contains(cmd), "local-cluster.sh has `{cmd}`");
    }
    // shellcheck where it is installed (it is not part of the toolchain).
    match Command::new("shellcheck").arg(&script).output() {
        Ok(out) => assert!(
            out.status.success(),
            "shellcheck scripts/local-cluster.sh:\n{}",
            String::from_utf8_lossy(&out.stdout)
        ),
        Err(_) => eprintln!("shellcheck not installed: skipped"),
    }
}

#[test]
fn local_cluster_script_shows_usage_and_refuses_bad_input() {
    let script = file("scripts/local-cluster.sh");
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = |args: &[&str]| {
        Command::new("bash")
            .arg(&script)
            .args(args)
            .env("LOCAL_CLUSTER_DIR", tmp.path().join("state"))
            .output()
            .expect("run local-cluster.sh")
    };
    let help = run(&["--help"]);
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("up [N]"));
    assert_eq!(run(&[]).status.code(), Some(2), "no command: usage, exit 2");
    let bad = run(&["up", "zero"]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("positive integer"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    // Nothing running: status says so, down does nothing.
    let status = run(&["status"]);
    assert!(status.status.success());
    assert!(String::from_utf8_lossy(&status.stdout).contains("not running"));
    assert!(run(&["down"]).status.success());
}
