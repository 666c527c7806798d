//! Input schemas of imported tools, made acceptable to every provider: a top-level object with
//! `properties`, local `$ref`s inlined (providers differ in what they resolve), no `$schema`,
//! and valid JSON Schema (a schema the validator cannot compile is refused with the reason).

use serde_json::{Map, Value, json};

/// How deep `$ref`s are inlined; a reference cycle stops at the first repeat.
const MAX_REF_DEPTH: usize = 16;

/// The schema a model is shown for an MCP tool's `inputSchema`, or why the tool cannot be used.
pub fn normalize(input: &Map<String, Value>) -> Result<Value, String> {
    let defs = collect_defs(input);
    let mut stack = Vec::new();
    let mut schema = inline(&Value::Object(input.clone()), &defs, &mut stack)?;
    let Some(obj) = schema.as_object_mut() else {
        return Err("the input schema is not a JSON object".to_string());
    };
    for key in ["$schema", "$defs", "definitions", "$id"] {
        obj.remove(key);
    }
    match obj.get("type") {
        None => {
            obj.insert("type".into(), json!("object"));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!("the input schema must describe an object (\"type\": \"object\"), not {other}"));
        }
    }
    match obj.get("properties") {
        None | Some(Value::Null) => {
            obj.insert("properties".into(), json!({}));
        }
        Some(Value::Object(_)) => {}
        Some(other) => return Err(format!("`properties` must be an object, not {other}")),
    }
    jsonschema::validator_for(&schema).map_err(|e| format!("the input schema is not valid JSON Schema: {e}"))?;
    Ok(schema)
}

fn collect_defs(root: &Map<String, Value>) -> Map<String, Value> {
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(table)) = root.get(key) {
            for (name, schema) in table {
                defs.insert(format!("#/{key}/{name}"), schema.clone());
            }
        }
    }
    defs
}

fn inline(value: &Value, defs: &Map<String, Value>, stack: &mut Vec<String>) -> Result<Value, String> {
    match value {
        Value::Object(obj) => {
            if let Some(Value::String(target)) = obj.get("$ref") {
                let Some(def) = defs.get(target) else {
                    return Err(format!("the input schema refers to `{target}`, which it does not define"));
                };
                if stack.contains(target) || stack.len() >= MAX_REF_DEPTH {
                    // A recursive structure: describe the inner level loosely rather than forever.
                    return Ok(json!({}));
                }
                stack.push(target.clone());
                let mut resolved = inline(def, defs, stack)?;
                stack.pop();
                // Keywords beside `$ref` (a description, say) are kept over the definition's.
                if let Value::Object(resolved_obj) = &mut resolved {
                    for (k, v) in obj {
                        if k != "$ref" {
                            resolved_obj.insert(k.clone(), inline(v, defs, stack)?);
                        }
                    }
                }
                return Ok(resolved);
            }
            let mut out = Map::new();
            for (k, v) in obj {
                if k == "$defs" || k == "definitions" {
                    continue;
                }
                out.insert(k.clone(), inline(v, defs, stack)?);
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => {
            Ok(Value::Array(items.iter().map(|v| inline(v, defs, stack)).collect::<Result<_, _>>()?))
        }
        other => Ok(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(v: Value) -> Result<Value, String> {
        normalize(v.as_object().unwrap())
    }

    #[test]
    fn refs_are_inlined_and_missing_parts_added() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "properties": {"item": {"$ref": "#/$defs/Item", "description": "The item."}},
            "$defs": {"Item": {"type": "object", "properties": {"id": {"type": "integer"}}}}
        });
        let out = norm(schema).unwrap();
        assert_eq!(
            out,
            json!({"type": "object", "properties": {"item": {"type": "object", "properties": {"id": {"type": "integer"}}, "description": "The item."}}})
        );
        assert_eq!(norm(json!({})).unwrap(), json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn recursive_refs_stop_at_the_first_repeat() {
        let schema = json!({
            "type": "object",
            "properties": {"node": {"$ref": "#/definitions/Node"}},
            "definitions": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/definitions/Node"}}}}
        });
        let out = norm(schema).unwrap();
        assert_eq!(out["properties"]["node"]["properties"]["child"], json!({}));
    }

    #[test]
    fn broken_schemas_are_refused_with_the_reason() {
        let err = norm(json!({"type": "object", "properties": {"x": {"type": "strng"}}})).unwrap_err();
        assert!(err.starts_with("the input schema is not valid JSON Schema"), "{err}");
        let err = norm(json!({"type": "array"})).unwrap_err();
        assert!(err.contains("must describe an object"), "{err}");
        let err = norm(json!({"properties": {"x": {"$ref": "#/$defs/Missing"}}})).unwrap_err();
        assert!(err.contains("does not define"), "{err}");
        let err = norm(json!({"properties": 5})).unwrap_err();
        assert!(err.contains("`properties` must be an object"), "{err}");
    }
}
