//! JSON Schemas for tool arguments: derived from Rust types (draft 2020-12, `$defs` inlined,
//! only standard `format`s), and compiled validators for the decode stage.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::RestrictFormats;
use serde_json::{Map, Value, json};

/// The parameters schema of an argument type, as sent to models.
///
/// Draft 2020-12 with every subschema inlined; the `$schema` and `title` keywords are dropped
/// (they cost context and no provider needs them), as are non-standard formats such as `uint32`
/// (schemars already adds `minimum: 0` for unsigned integers).
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .with_transform(RestrictFormats::default())
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
    }
    ensure_object_schema(schema)
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
        assert_eq!(schema["properties"]["limit"]["minimum"], 0);
        assert_eq!(schema["required"], json!(["items"]));
    }

    #[test]
    fn non_object_schema_becomes_an_empty_object_schema() {
        assert_eq!(ensure_object_schema(json!(true)), json!({"type": "object", "properties": {}}));
    }
}
