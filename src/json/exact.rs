//! The parse's visitor: builds a `Value` as serde_json's own does, but
//! refuses duplicate member names and non-finite numbers, and tells its
//! notes where it goes.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::notes::Notes;

/// Builds a [`Value`] like serde_json's own visitor, but refuses duplicate
/// member names and non-finite numbers, and tells its [`Notes`] where it
/// goes and which numbers it reads.
pub(super) struct Exact<'a, N> {
    pub(super) notes: &'a N,
}

impl<N> Clone for Exact<'_, N> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<N> Copy for Exact<'_, N> {}

impl<'de, N: Notes> DeserializeSeed<'de> for Exact<'_, N> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, N: Notes> Visitor<'de> for Exact<'_, N> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        self.notes.number(None);
        Ok(Value::from(i))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        self.notes.number(None);
        Ok(Value::from(u))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        self.notes.number(Some(f));
        Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.notes.open().map_err(de::Error::custom)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Item {
            exact: self,
            index: items.len(),
        })? {
            items.push(item);
        }
        self.notes.close();
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.notes.open().map_err(de::Error::custom)?;
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // One lookup: the member's slot is found once, whether it is
            // new (filled) or a duplicate (refused).
            match members.entry(key) {
                serde_json::map::Entry::Occupied(slot) => {
                    self.notes.member(slot.key());
                    return Err(de::Error::custom("duplicate object member name"));
                }
                serde_json::map::Entry::Vacant(slot) => {
                    self.notes.member(slot.key());
                    let value = map.next_value_seed(self)?;
                    self.notes.left();
                    slot.insert(value);
                }
            }
        }
        self.notes.close();
        Ok(Value::Object(members))
    }
}

/// One array item, announced to the notes while it is read (and only once
/// it is known to exist, so that a missing separator is placed on the
/// array).
struct Item<'a, N> {
    exact: Exact<'a, N>,
    index: usize,
}

impl<'de, N: Notes> DeserializeSeed<'de> for Item<'_, N> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.exact.notes.item(self.index);
        let item = d.deserialize_any(self.exact)?;
        self.exact.notes.left();
        Ok(item)
    }
}
