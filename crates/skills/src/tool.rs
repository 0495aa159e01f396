//! The `skill` tool: activates a skill by name and returns its instructions with its folder,
//! and `ActiveSkills`, the skills activated in the current turn (whose `allowed-tools` are
//! pre-approved while it lasts).
//!
//! Invariant: the skill is read again from its file when it changed since the catalogue was
//! made; a skill with `disable-model-invocation` cannot be activated by the model.

use std::sync::{Arc, Mutex, PoisonError};

use codecoder_kernel::{Tool, ToolContext, ToolKind, ToolOutput};
use codecoder_protocol::ToolError;
use serde_json::{Value, json};

use crate::discovery::{Scope, SkillStore};
use crate::skill::Skill;
use crate::substitute::activation_text;

/// The skills activated in the current turn.
#[derive(Debug, Clone, Default)]
pub struct ActiveSkills {
    active: Arc<Mutex<Vec<Skill>>>,
    project_trusted: bool,
}

impl ActiveSkills {
    /// None active yet. In an untrusted project (`project_trusted` false) the project's skills
    /// pre-approve nothing.
    pub fn new(project_trusted: bool) -> Self {
        Self { active: Arc::default(), project_trusted }
    }

    /// Marks `skill` active.
    pub fn activate(&self, mut skill: Skill) {
        if skill.scope == Scope::Project && !self.project_trusted {
            skill.allowed_tools.clear();
        }
        let mut active = self.active.lock().unwrap_or_else(PoisonError::into_inner);
        active.retain(|s| s.name != skill.name);
        active.push(skill);
    }

    /// The tools the active skills pre-approve, as their files spell them.
    pub fn allowed_tools(&self) -> Vec<String> {
        let active = self.active.lock().unwrap_or_else(PoisonError::into_inner);
        active.iter().flat_map(|skill| skill.allowed_tools.iter().cloned()).collect()
    }

    /// Ends every activation (the turn ended).
    pub fn clear(&self) {
        self.active.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

/// The `skill` tool.
#[derive(Debug)]
pub struct SkillTool {
    store: Arc<SkillStore>,
    session_id: String,
    active: ActiveSkills,
}

impl SkillTool {
    /// The tool over `store`, in session `session_id`, recording activations in `active`.
    pub fn new(store: Arc<SkillStore>, session_id: String, active: ActiveSkills) -> Self {
        Self { store, session_id, active }
    }
}

impl Tool for SkillTool {
    fn name(&self) -> &str {
        "skill"
    }

    fn description(&self) -> &str {
        "Activate a skill listed under \"Skills\" in your instructions: returns its full \
         instructions and its folder (read its bundled files from there). Activate a skill \
         before doing a task it matches."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "description": "The skill's exact name." },
                "arguments": { "type": "string", "description": "Arguments for the skill, if it takes any." }
            },
            "required": ["name"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn summary(&self, args: &Value) -> String {
        format!("skill: {}", args["name"].as_str().unwrap_or_default())
    }

    fn execute(&self, _ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let name = args["name"].as_str().unwrap_or_default().trim().trim_start_matches('$');
        let arguments = args["arguments"].as_str().unwrap_or_default();
        let skill = self
            .store
            .get(name)
            .map_err(|err| ToolError::InvalidArguments { message: err.to_string() })?;
        if skill.disable_model_invocation {
            return Err(ToolError::Failed {
                message: format!("skill `{name}` can only be activated by the person"),
            });
        }
        let text = activation_text(&skill, arguments, &self.session_id);
        self.active.activate(skill);
        Ok(ToolOutput::text(text))
    }
}
