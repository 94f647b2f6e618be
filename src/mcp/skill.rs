//! The skill that teaches an agent the gateway: one `SKILL.md` (what muxgate is, the first
//! calls, targets, waiting, batching, limits), built into the binary.
//!
//! Offered three ways, as the client can take it:
//! - through the Skills extension (`io.modelcontextprotocol/skills`), which the gateway
//!   declares: `skills/list` and `skills/get` answer its entry (frontmatter, digest, size), and
//!   `resources/read` of [`URI`] its text;
//! - as a plain resource: `resources/list` lists [`URI`] for clients that do not implement the
//!   extension (to them a `skill://` resource is an ordinary one);
//! - as the prompt [`PROMPT_NAME`], whose message is the text;
//!
//! and `muxgate skill` prints it. Static text: reading it touches no server, and every
//! authenticated client may read it.

use rmcp::model::{
    GetPromptResult, Prompt, PromptMessage, ReadResourceResult, Resource, ResourceContents, Role,
    Skill, SkillFrontmatter, SkillResource, SkillResources,
};

/// The text, frontmatter first.
pub(crate) const SKILL_MD: &str = include_str!("skill/SKILL.md");

/// The skill's name (its frontmatter's `name`, the last segment of its path).
pub(crate) const NAME: &str = "muxgate";

/// Where the skill is read.
pub(crate) const URI: &str = "skill://muxgate/SKILL.md";

/// The prompt that hands the skill to a client without the extension.
pub(crate) const PROMPT_NAME: &str = "use_muxgate";

const MIME_TYPE: &str = "text/markdown";

/// The frontmatter's fields in order, as written: `key: value` lines between `---` lines (the
/// plain YAML scalars this file uses; a unit test holds it to that).
pub(crate) fn frontmatter_fields() -> Vec<(&'static str, &'static str)> {
    let mut lines = SKILL_MD.lines();
    if lines.next() != Some("---") {
        return Vec::new();
    }
    lines
        .take_while(|line| *line != "---")
        .filter_map(|line| line.split_once(": "))
        .collect()
}

/// The frontmatter's `description`.
pub(crate) fn description() -> &'static str {
    frontmatter_fields()
        .into_iter()
        .find_map(|(key, value)| (key == "description").then_some(value))
        .unwrap_or_default()
}

/// The entry `skills/list` and `skills/get` answer: the frontmatter verbatim and the one file,
/// with its digest and size.
pub(crate) fn entry() -> Skill {
    let mut frontmatter = SkillFrontmatter::new(NAME, description());
    for (key, value) in frontmatter_fields() {
        if !matches!(key, "name" | "description") {
            frontmatter = frontmatter.with_field(key, value);
        }
    }
    Skill::new(
        URI,
        frontmatter,
        SkillResources::Files(vec![SkillResource::from_bytes(URI, SKILL_MD.as_bytes())]),
    )
}

/// The skill as `resources/list` lists it.
pub(crate) fn resource() -> Resource {
    Resource::new(URI, NAME)
        .with_title("How to use muxgate")
        .with_description(description())
        .with_mime_type(MIME_TYPE)
        .with_size(SKILL_MD.len() as u64)
}

/// `resources/read` of [`URI`].
pub(crate) fn read() -> ReadResourceResult {
    ReadResourceResult::new(vec![
        ResourceContents::text(SKILL_MD, URI).with_mime_type(MIME_TYPE),
    ])
}

/// The prompt as `prompts/list` lists it.
pub(crate) fn prompt() -> Prompt {
    Prompt::new(PROMPT_NAME, Some(description()), None).with_title("How to use muxgate")
}

/// `prompts/get` of [`PROMPT_NAME`]: the skill as one user message.
pub(crate) fn get_prompt() -> GetPromptResult {
    GetPromptResult::new(vec![PromptMessage::new_text(Role::User, SKILL_MD)])
        .with_description(description())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frontmatter_is_plain_and_names_the_skill() {
        let fields = frontmatter_fields();
        let keys: Vec<&str> = fields.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, ["name", "description"]);
        assert_eq!(fields[0].1, NAME);
        // Plain YAML scalars only: what the entry renders is what a YAML parser reads.
        let head: Vec<&str> = SKILL_MD
            .lines()
            .skip(1)
            .take_while(|l| *l != "---")
            .collect();
        assert_eq!(head.len(), fields.len(), "one `key: value` per line");
        for (key, value) in &fields {
            assert!(
                !value.contains(": ")
                    && !value.contains(" #")
                    && !value
                        .starts_with(['"', '\'', '[', '{', '&', '*', '!', '|', '>', '%', '@', '`']),
                "{key}: {value:?} is not a plain scalar"
            );
        }
        // Agent Skills: a name of lowercase letters, digits and hyphens, a description of at
        // most 1024 characters.
        assert!(
            NAME.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        );
        assert!((1..=1024).contains(&description().chars().count()));
    }

    #[test]
    fn the_entry_is_valid_and_matches_the_text() {
        let entry = entry();
        entry.validate().unwrap();
        assert_eq!(entry.name(), NAME);
        let SkillResources::Files(files) = &entry.resources else {
            panic!("a static skill lists its files");
        };
        assert_eq!(files.len(), 1);
        files[0].verify(SKILL_MD.as_bytes()).unwrap();
        assert!(URI.ends_with(&format!("/{NAME}/SKILL.md")));
    }

    #[test]
    fn the_prompt_and_the_resource_carry_the_text() {
        let prompt = get_prompt();
        assert_eq!(
            prompt.messages[0]
                .content
                .as_text()
                .map(|t| t.text.as_str()),
            Some(SKILL_MD)
        );
        assert_eq!(resource().uri, URI);
        assert!(matches!(
            &read().contents[0],
            ResourceContents::TextResourceContents { text, .. } if text == SKILL_MD
        ));
    }
}
