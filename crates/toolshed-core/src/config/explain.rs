//! The effective configuration and where each value came from (`toolshed config show`).
//!
//! Origins are found by watching the loader, not by repeating its rules: after each layer (a
//! file, or a `--config KEY=VALUE` override) is merged, the effective document is taken again.
//! A value comes from the last layer that changed it or wrote its key; a value no layer touched
//! is toolshed's default. So a file whose `[session]` table replaces an earlier one is named as
//! the origin of every value that table reset, as the loader's merge really works.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use super::{Config, ConfigError, Override, PermissionRules};

/// Which kind of source a layer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LayerKind {
    /// The user's config file (`~/.config/toolshed/config.toml`).
    User,
    /// The file `--config FILE` names in place of the user's.
    ConfigFile,
    /// The worktree's `toolshed.toml`.
    Project,
    /// A `--config KEY=VALUE` override.
    Override,
}

impl LayerKind {
    /// A few words for people: "user config", "project".
    pub fn describe(self) -> &'static str {
        match self {
            LayerKind::User => "user config",
            LayerKind::ConfigFile => "--config file",
            LayerKind::Project => "project",
            LayerKind::Override => "override",
        }
    }
}

/// One source of configuration that was applied (files that do not exist are not layers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Layer {
    /// The file, or `--config KEY=VALUE` for an override (as [`Config::permission_files`] names it).
    pub path: PathBuf,
    /// What kind of source it is.
    pub kind: LayerKind,
}

/// One value of the effective configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Setting {
    /// Its key path, e.g. `["session", "max_steps"]`. An element of a list that files add to
    /// (`permission`, `agent.NAME.permission`, `env.pass`) ends with its index.
    pub key: Vec<String>,
    /// The value (a rule is `{"permission", "pattern", "action"}`).
    pub value: Value,
    /// The layer it came from; `None` for toolshed's default.
    pub from: Option<PathBuf>,
}

/// The configuration with its layers and each value's origin.
#[derive(Debug, Clone)]
pub struct Explained {
    /// The merged configuration, as [`Config::load_with`] returns it.
    pub config: Config,
    /// The layers, in the order applied.
    pub layers: Vec<Layer>,
    /// Every value of [`Config::document`], in document order.
    pub settings: Vec<Setting>,
}

impl Config {
    /// [`Config::load_with`], and where each value of the result came from.
    pub fn explain(user_file: Option<&Path>, root: &Path, overrides: &[Override]) -> Result<Explained, ConfigError> {
        let acceptance = crate::trust::Acceptance::load(&crate::paths::data_dir(), root);
        Config::explain_accepted(user_file, root, overrides, &acceptance)
    }

    /// [`Config::explain`], with the project's file taken as `acceptance` says.
    pub fn explain_accepted(
        user_file: Option<&Path>,
        root: &Path,
        overrides: &[Override],
        acceptance: &crate::trust::Acceptance,
    ) -> Result<Explained, ConfigError> {
        // Per layer: what it wrote (as JSON) and the effective document after it.
        let mut steps: Vec<(Layer, Value, Value)> = Vec::new();
        let config = Config::load_layers(user_file, root, overrides, acceptance, &mut |config, layer, text| {
            let written = toml::from_str::<toml::Table>(text)
                .ok()
                .and_then(|table| serde_json::to_value(table).ok())
                .unwrap_or(Value::Null);
            steps.push((layer.clone(), written, config.document()));
        })?;
        let defaults = Config::default().document();
        let mut settings = Vec::new();
        leaves(&config.document(), &mut Vec::new(), &mut |key, value, appended| {
            let mut before = at(&defaults, key);
            let mut from = None;
            for (layer, written, after) in &steps {
                let now = at(after, key);
                // An element of a list that adds up belongs to the layer that added it; any
                // other value also to the last layer that wrote it, even unchanged.
                if now != before || (!appended && wrote(written, key)) {
                    from = Some(layer.path.clone());
                }
                before = now;
            }
            settings.push(Setting { key: key.to_vec(), value: value.clone(), from });
        });
        Ok(Explained { config, layers: steps.into_iter().map(|(layer, _, _)| layer).collect(), settings })
    }

    /// The effective configuration shaped like a config file, with the defaults filled in;
    /// unset values, empty lists and empty tables are left out, and permission rules are
    /// lists of `{"permission", "pattern", "action"}` in the order they apply.
    pub fn document(&self) -> Value {
        // Exhaustive, so a new field is a compile error here until it is shown.
        let Config {
            model,
            default_agent,
            output,
            permission,
            permission_files: _,
            project_note: _,
            user_note: _,
            agents,
            sandbox,
            providers,
            mcp,
            mcp_server,
            tool_search,
            session,
            websearch,
            lsp,
            env,
            sources: _,
        } = self;
        let crate::output::OutputLimits { max_lines, max_bytes, spill_max_bytes, spill_dir_max_bytes, max_blob_bytes } =
            *output;
        let super::SandboxConfig { mode, allow_unsandboxed, block_network, allow_sockets } = sandbox;
        let mut doc = Map::new();
        let mut put = |key: &str, value: Value| {
            doc.insert(key.to_string(), value);
        };
        put("model", value(model));
        put("default_agent", value(default_agent));
        put(
            "output",
            object([
                ("max_lines", value(&max_lines)),
                ("max_bytes", value(&max_bytes)),
                ("spill_max_bytes", value(&spill_max_bytes)),
                ("spill_dir_max_bytes", value(&spill_dir_max_bytes)),
                ("max_blob_bytes", value(&max_blob_bytes)),
            ]),
        );
        put("permission", value(&PermissionRules(permission.clone())));
        put("agent", value(agents));
        put(
            "sandbox",
            object([
                ("mode", value(mode)),
                ("allow_unsandboxed", value(allow_unsandboxed)),
                ("block_network", value(block_network)),
                ("allow_sockets", value(allow_sockets)),
            ]),
        );
        put("provider", value(providers));
        put("mcp", value(mcp));
        put("mcp_server", value(mcp_server));
        put("tool_search", value(tool_search));
        put("session", value(session));
        put("websearch", value(websearch));
        put("lsp", value(lsp));
        put("env", value(env));
        let mut doc = Value::Object(doc);
        prune(&mut doc);
        doc
    }
}

fn value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// Removes nulls, empty lists and empty tables, innermost first.
fn prune(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.values_mut().for_each(prune);
            map.retain(|_, v| !is_empty(v));
        }
        Value::Array(items) => items.iter_mut().for_each(prune),
        _ => {}
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// Whether the list at `key` is one that later files add to rather than replace (see the
/// module doc of [`crate::config`]): `[permission]`, `[agent.NAME] permission`, `[env] pass`.
fn adds_up(key: &[String]) -> bool {
    let key: Vec<&str> = key.iter().map(String::as_str).collect();
    matches!(key.as_slice(), ["permission"] | ["agent", _, "permission"] | ["env", "pass"])
}

/// Calls `f` with each value to report: scalars, lists, and each element of a list that adds
/// up (with `true`).
fn leaves(value: &Value, key: &mut Vec<String>, f: &mut dyn FnMut(&[String], &Value, bool)) {
    match value {
        Value::Object(map) => {
            for (name, inner) in map {
                key.push(name.clone());
                leaves(inner, key, f);
                key.pop();
            }
        }
        Value::Array(items) if adds_up(key) => {
            for (i, item) in items.iter().enumerate() {
                key.push(i.to_string());
                f(key, item, true);
                key.pop();
            }
        }
        _ => f(key, value, false),
    }
}

/// The value at `key` (list elements by index).
fn at<'a>(doc: &'a Value, key: &[String]) -> Option<&'a Value> {
    key.iter().try_fold(doc, |node, name| match node {
        Value::Object(map) => map.get(name),
        Value::Array(items) => name.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

/// Whether a layer wrote `key` itself (`agent = "NAME"` writes `default_agent`).
fn wrote(written: &Value, key: &[String]) -> bool {
    if let [only] = key
        && only == "default_agent"
        && written.get("agent").is_some_and(Value::is_string)
    {
        return true;
    }
    at(written, key).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explained(user: &str, project: &str, overrides: &[&str]) -> Explained {
        let dir = tempfile::tempdir().unwrap();
        let user_file = dir.path().join("user.toml");
        std::fs::write(&user_file, user).unwrap();
        std::fs::write(dir.path().join("toolshed.toml"), project).unwrap();
        let overrides: Vec<Override> = overrides.iter().map(|o| Override::parse(o).unwrap()).collect();
        let everything = crate::trust::Acceptance::everything(dir.path());
        Config::explain_accepted(Some(&user_file), dir.path(), &overrides, &everything).unwrap()
    }

    /// Where `key` came from: a file's name, an override as written.
    fn origin(e: &Explained, key: &str) -> Option<String> {
        let setting = e.settings.iter().find(|s| s.key.join(".") == key).unwrap_or_else(|| panic!("no {key}"));
        let layer = e.layers.iter().find(|l| Some(&l.path) == setting.from.as_ref())?;
        Some(match layer.kind {
            LayerKind::Override => layer.path.display().to_string(),
            _ => layer.path.file_name().unwrap().to_string_lossy().into_owned(),
        })
    }

    #[test]
    fn each_value_names_the_last_layer_that_set_it() {
        let e = explained(
            "model = \"a/b\"\n[session]\nmax_steps = 9\ncompact_at = 0.5\n[permission]\nbash = \"ask\"\n[env]\npass = [\"A\"]\n",
            "model = \"a/b\"\n[session]\nmax_steps = 7\n[permission]\nedit = \"deny\"\n[env]\npass = [\"A\", \"B\"]\n",
            &["output.max_lines=10"],
        );
        assert_eq!(
            e.layers.iter().map(|l| l.kind).collect::<Vec<_>>(),
            [LayerKind::ConfigFile, LayerKind::Project, LayerKind::Override]
        );
        // Written again unchanged: the later file is where it now comes from.
        assert_eq!(origin(&e, "model").as_deref(), Some("toolshed.toml"));
        assert_eq!(origin(&e, "session.max_steps").as_deref(), Some("toolshed.toml"));
        // The project's [session] replaced the user's whole, so compact_at went back to its default there.
        assert_eq!(origin(&e, "session.compact_at").as_deref(), Some("toolshed.toml"));
        assert_eq!(e.config.session.compact_at, 0.85);
        assert_eq!(origin(&e, "session.snapshot_retention_days"), None);
        assert_eq!(origin(&e, "output.max_lines").as_deref(), Some("--config output.max_lines=10"));
        assert_eq!(origin(&e, "output.max_bytes"), None);
        assert_eq!(origin(&e, "permission.0").as_deref(), Some("user.toml"));
        assert_eq!(origin(&e, "permission.1").as_deref(), Some("toolshed.toml"));
        assert_eq!(origin(&e, "env.pass.0").as_deref(), Some("user.toml"));
        assert_eq!(origin(&e, "env.pass.1").as_deref(), Some("toolshed.toml"));
    }

    #[test]
    fn an_override_inside_a_replaced_section_names_only_its_own_key() {
        let e = explained(
            "",
            "[provider.local]\nkind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:1/v1\"\n",
            &["provider.local.base_url=http://127.0.0.1:2/v1"],
        );
        assert_eq!(origin(&e, "provider.local.kind").as_deref(), Some("toolshed.toml"));
        assert_eq!(
            origin(&e, "provider.local.base_url").as_deref(),
            Some("--config provider.local.base_url=http://127.0.0.1:2/v1"),
            "{:?}",
            e.settings
        );
    }

    #[test]
    fn agent_as_a_name_is_the_default_agent() {
        let e = explained("default_agent = \"plan\"\n", "agent = \"plan\"\n", &[]);
        assert_eq!(origin(&e, "default_agent").as_deref(), Some("toolshed.toml"));
    }
}
