//! Whatever arguments a client sends, the approval policy answers without panicking, and a
//! call whose arguments hold the pattern in any string, however deep, is always held.

#![no_main]

use libfuzzer_sys::fuzz_target;
use muxgate::approvals::{ApprovalPolicy, ApprovalsConfig, CallFacts};
use muxgate::auth::Tier;
use serde_json::Value;

const NEEDLE: &str = "rm -rf";

fn holds_needle(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains(NEEDLE),
        Value::Array(items) => items.iter().any(holds_needle),
        Value::Object(map) => map.values().any(holds_needle),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(args) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let config: ApprovalsConfig = match toml::from_str(
        "[[rules]]\nname = \"dangerous\"\npattern = 'rm -rf|git push'\n",
    ) {
        Ok(config) => config,
        Err(error) => panic!("the fixed rules parse: {error}"),
    };
    let Ok(policy) = ApprovalPolicy::compile(&config) else {
        panic!("the fixed rules compile");
    };
    let held = policy.rule_for(CallFacts {
        tool: "send_keys",
        tier: Tier::Mutating,
        sub: "agent",
        args: &args,
    });
    if holds_needle(&args) {
        assert_eq!(held, Some("dangerous"));
    }
});
