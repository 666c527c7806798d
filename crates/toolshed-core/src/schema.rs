//! JSON Schemas for tool arguments: derived from Rust types (draft 2020-12, `$defs` inlined,
//! only standard `format`s), and compiled validators for the decode stage.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::RestrictFormats;
use serde_json::{Map, Value, json};

/// The parameters schema of an argument type, as sent to models.
///
/// Draft 2020-12 with every subschema inlined; the `$schema` and `title` keywords and the root's
/// description (the argument struct's doc comment: the tool's description says it) are dropped,
/// as are non-standard formats such as `uint32` and the `minimum: 0` schemars adds for unsigned
/// integers (the decoder refuses a negative number anyway). Every byte here is sent on every
/// step, so the schema is then written the short way ([`slim_optional`]).
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .with_transform(drop_unsigned_minimum)
        .with_transform(RestrictFormats::default())
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
        obj.remove("description");
        // A built-in tool whose schema `closed` closes refuses unknown parameters at validation
        // anyway: saying so in its schema would only cost bytes. One it leaves open (no
        // parameters, such as plan_exit's) keeps the marker.
        if obj.get("additionalProperties") == Some(&Value::Bool(false)) {
            obj.shift_remove("additionalProperties");
            if !closes(obj) {
                obj.insert("additionalProperties".into(), Value::Bool(false));
            }
        }
    }
    slim_optional(&mut schema);
    ensure_object_schema(schema)
}

/// `schema` with `"additionalProperties": false` at its root, if its root lists every parameter
/// in `properties` (at least one) and says nothing about others; `None` otherwise: a schema
/// with no properties (a tool of free-form arguments, such as `serde_json::Value`), one whose
/// parameters are given by a combinator (`oneOf` for an enum of argument shapes, `$ref`, ...),
/// or one that already says what it takes of other properties is left as it is.
pub fn closed(schema: &Value) -> Option<Value> {
    let obj = schema.as_object().filter(|obj| closes(obj))?;
    let mut obj = obj.clone();
    obj.insert("additionalProperties".into(), Value::Bool(false));
    Some(Value::Object(obj))
}

/// Whether [`closed`] closes a schema of this root.
fn closes(obj: &Map<String, Value>) -> bool {
    const OPEN_ENDED: &[&str] = &[
        "additionalProperties",
        "patternProperties",
        "unevaluatedProperties",
        "oneOf",
        "anyOf",
        "allOf",
        "$ref",
        "if",
        "not",
        "dependentSchemas",
    ];
    let listed = obj.get("properties").and_then(Value::as_object).is_some_and(|p| !p.is_empty());
    listed && !OPEN_ENDED.iter().any(|k| obj.contains_key(*k))
}

/// Drops the `minimum: 0` schemars adds to an unsigned integer (told by its `uint*` format,
/// before the formats are restricted): the decoder refuses a negative number anyway, and the
/// bytes are sent on every request. A `minimum: 0` a field asks for itself stays.
fn drop_unsigned_minimum(schema: &mut schemars::Schema) {
    if let Some(obj) = schema.as_object_mut() {
        let unsigned = obj.get("format").and_then(Value::as_str).is_some_and(|f| f.starts_with("uint"));
        if unsigned && obj.get("minimum").is_some_and(|m| m == 0) {
            obj.remove("minimum");
        }
    }
    schemars::transform::transform_subschemas(&mut drop_unsigned_minimum, schema);
}

/// Drops `null` from what an optional parameter (one not in `required`) may be: an `Option<T>`
/// field says `"type": ["T", "null"]`, an optional enum lists `null` among its values, and a
/// `#[serde(default)]` one adds a `"default"` (left out too: a default that matters is said in
/// the description). Leaving the parameter out already means "not given", so the `null` only
/// costs bytes; the decode stage still takes a `null` that a model
/// sends for such a parameter as "not given" ([`crate::exec`]'s decode drops it).
///
/// Two more shapes are written the short way: an enum whose values carry doc comments (a
/// `oneOf` of `const`s) becomes a plain `enum` (the field's own description says what the
/// values mean), and an array's `items` loses the item type's doc comment (the array's
/// description says it). An empty description (`#[schemars(description = "")]`, for a field
/// whose name says it all while Rust still wants a doc comment) is left out.
pub fn slim_optional(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else { return };
    // `#[schemars(description = "")]` marks a field whose name says it all.
    if obj.get("description").is_some_and(|d| d == "") {
        obj.remove("description");
    }
    if let Some(Value::Array(branches)) = obj.get("oneOf") {
        let consts: Option<Vec<Value>> = branches
            .iter()
            .map(|b| {
                let o = b.as_object()?;
                let plain = o.keys().all(|k| matches!(k.as_str(), "const" | "type" | "description"));
                o.get("const").filter(|c| plain && c.is_string()).cloned()
            })
            .collect();
        if let Some(consts) = consts.filter(|c| !c.is_empty()) {
            obj.remove("oneOf");
            obj.insert("type".into(), Value::from("string"));
            obj.insert("enum".into(), Value::Array(consts));
        }
    }
    let required: Vec<String> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if !required.contains(name) {
                drop_null(prop);
            }
            slim_optional(prop);
        }
    }
    if let Some(items) = obj.get_mut("items") {
        if let Some(items) = items.as_object_mut() {
            items.remove("description");
        }
        slim_optional(items);
    }
}

fn drop_null(prop: &mut Value) {
    let Some(p) = prop.as_object_mut() else { return };
    // `Option<Enum>` comes as `anyOf: [<the enum>, {"type": "null"}]`: keep the enum.
    if let Some(Value::Array(branches)) = p.get("anyOf") {
        let is_null =
            |b: &Value| b.get("type").is_some_and(|t| t == "null") && b.as_object().is_some_and(|o| o.len() == 1);
        if branches.len() == 2 && branches.iter().filter(|b| is_null(b)).count() == 1 {
            let kept = branches.iter().find(|b| !is_null(b)).cloned();
            if let Some(Value::Object(kept)) = kept {
                p.remove("anyOf");
                for (k, v) in kept {
                    p.entry(k).or_insert(v);
                }
            }
        }
    }
    if let Some(Value::Array(types)) = p.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types[0].clone();
            p.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = p.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    // A default that matters is said in the description; the rest is the tool's business.
    p.shift_remove("default");
}

/// Whether a property schema says, in its own `type`, that it takes `null`. A schema that does
/// not say (no `type`, or an `anyOf`) is taken to accept it: the validator then decides.
pub fn admits_null(prop: &Value) -> bool {
    match prop.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => true,
    }
}

/// Makes sure a parameters schema has `type: "object"` and a `properties` map at the top
/// level, which every provider requires (Anthropic rejects anything else).
pub fn ensure_object_schema(schema: Value) -> Value {
    let mut obj = match schema {
        Value::Object(obj) => obj,
        _ => Map::new(),
    };
    obj.entry("type").or_insert_with(|| json!("object"));
    obj.entry("properties").or_insert_with(|| json!({}));
    Value::Object(obj)
}

/// The schema of a freeform tool's JSON fallback: one required string field `input`.
pub fn freeform_parameters(input_description: &str) -> Value {
    json!({
        "type": "object",
        "properties": { "input": { "type": "string", "description": input_description } },
        "required": ["input"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Inner {
        /// Where.
        path: String,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Outer {
        /// Items to touch.
        items: Vec<Inner>,
        /// How many, at most.
        limit: Option<u32>,
    }

    #[test]
    fn schema_inlines_defs_and_drops_nonstandard_formats() {
        let schema = schema_for::<Outer>();
        let text = schema.to_string();
        assert!(!text.contains("$defs") && !text.contains("$ref"), "{text}");
        assert!(!text.contains("uint32"), "{text}");
        assert!(schema.get("$schema").is_none());
        assert_eq!(schema["properties"]["items"]["items"]["properties"]["path"]["description"], "Where.");
        assert!(schema["properties"]["limit"].get("minimum").is_none(), "optional and unsigned: {text}");
        assert_eq!(schema["required"], json!(["items"]));
        assert!(schema.get("description").is_none(), "{text}");
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    enum Mode {
        Fast,
        Slow,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    enum Told {
        /// Quickly.
        Fast,
        /// Slowly.
        Slow,
    }

    /// One step.
    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Step {
        /// How.
        how: Told,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Steps {
        /// The steps.
        steps: Vec<Step>,
    }

    #[test]
    fn described_enums_and_item_types_are_written_short() {
        let schema = schema_for::<Steps>();
        let items = &schema["properties"]["steps"]["items"];
        assert!(items.get("description").is_none(), "{schema}");
        assert_eq!(items["properties"]["how"]["enum"], json!(["Fast", "Slow"]), "{schema}");
        assert_eq!(items["properties"]["how"]["description"], "How.", "{schema}");
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Optional {
        /// Needed.
        name: Option<String>,
        #[serde(default)]
        mode: Option<Mode>,
        /// Left out or given.
        count: Option<u32>,
        /// Asked to be at least zero.
        #[schemars(range(min = 0))]
        offset: Option<i64>,
        /// Unsigned and required.
        size: u64,
    }

    #[test]
    fn optional_parameters_do_not_list_null() {
        let schema = schema_for::<Optional>();
        let text = schema.to_string();
        assert!(!text.contains("null"), "{text}");
        assert_eq!(schema["properties"]["count"]["type"], "integer");
        assert!(schema["properties"]["count"].get("minimum").is_none(), "{text}");
        assert!(schema["properties"]["size"].get("minimum").is_none(), "{text}");
        assert_eq!(schema["properties"]["offset"]["minimum"], 0, "a bound the field asks for: {text}");
        assert_eq!(schema["properties"]["mode"]["enum"], json!(["Fast", "Slow"]));
        assert!(admits_null(&json!({"anyOf": [{"type": "string"}, {"type": "null"}]})));
        assert!(admits_null(&json!({"type": ["string", "null"]})));
        assert!(!admits_null(&json!({"type": "string"})));
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Strict {
        /// A timeout.
        #[serde(default = "seven")]
        timeout: u32,
    }

    fn seven() -> u32 {
        7
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Nothing {}

    #[test]
    fn defaults_and_the_closed_marker_are_left_out_and_closed_adds_it_back() {
        // A tool of no parameters is not closed at validation, so its schema keeps saying it.
        assert_eq!(schema_for::<Nothing>()["additionalProperties"], false);
        let schema = schema_for::<Strict>();
        assert!(schema["properties"]["timeout"].get("default").is_none(), "{schema}");
        assert!(schema.get("additionalProperties").is_none(), "{schema}");
        assert_eq!(closed(&schema).unwrap()["additionalProperties"], false);
        // A schema that says what it takes of other properties is left as it is.
        assert!(closed(&json!({"type": "object", "properties": {}, "additionalProperties": true})).is_none());
        assert!(closed(&json!({"type": "string"})).is_none());
        // Parameters it does not list at its root, or none at all: not closed.
        let tagged = json!({"type": "object", "properties": {}, "oneOf": [
            {"type": "object", "properties": {"action": {"const": "create"}, "title": {"type": "string"}}},
            {"type": "object", "properties": {"action": {"const": "delete"}}}]});
        assert!(closed(&tagged).is_none());
        assert!(closed(&json!({"type": "object", "properties": {}})).is_none());
    }

    #[test]
    fn non_object_schema_becomes_an_empty_object_schema() {
        assert_eq!(ensure_object_schema(json!(true)), json!({"type": "object", "properties": {}}));
    }
}
