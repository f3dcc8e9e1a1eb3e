//! What one exact parse notes besides the value it builds: for `decode`,
//! only whether the text needs the lexical scan; for `read`, the pointer
//! of the value being read, the depth, and where each number stands.

use std::cell::{Cell, RefCell};

/// The smallest magnitude of a double an out-of-range integer literal
/// becomes: 2^63 (the first below i64::MIN is -2^63 - 1, which rounds to
/// -2^63; the first above u64::MAX rounds to 2^64).
const OVERFLOWED_INTEGER_MAGNITUDE: f64 = 9_223_372_036_854_775_808.0;

/// What one parse notes besides the value it builds: [`decode`] only what
/// decides whether to scan, [`read`] where it is.
pub(super) trait Notes {
    /// An array or object opens; `Err` (why) when it nests too deep.
    fn open(&self) -> Result<(), String>;
    /// The array or object that opened last has closed.
    fn close(&self);
    /// The value of member `key` is read next.
    fn member(&self, key: &str);
    /// Item `index` of an array is read next.
    fn item(&self, index: usize);
    /// The member or item announced last has been read.
    fn left(&self);
    /// A number was read (`Some` when it came as a float).
    fn number(&self, float: Option<f64>);
}

/// What [`decode`] notes: whether any float had the magnitude of an
/// overflowed integer literal.
#[derive(Default)]
pub(super) struct Plain {
    pub(super) saw_huge_float: Cell<bool>,
}

impl Notes for Plain {
    fn open(&self) -> Result<(), String> {
        Ok(())
    }
    fn close(&self) {}
    fn member(&self, _key: &str) {}
    fn item(&self, _index: usize) {}
    fn left(&self) {}
    fn number(&self, float: Option<f64>) {
        if float.is_some_and(|f| f.abs() >= OVERFLOWED_INTEGER_MAGNITUDE) {
            self.saw_huge_float.set(true);
        }
    }
}

/// What [`read`] notes: the pointer of the value being read, the depth,
/// and the pointer of every number.
#[derive(Default)]
pub(super) struct Placed {
    max_depth: usize,
    depth: Cell<usize>,
    /// The pointer of the value being read; after a failure, of where the
    /// parse stopped.
    pub(super) path: RefCell<String>,
    /// Where each announced segment of `path` starts.
    segments: RefCell<Vec<usize>>,
    /// The pointer of every number read, in document order.
    pub(super) numbers: RefCell<Vec<String>>,
}

impl Placed {
    /// Notes for a document nested at most `max_depth` levels.
    pub(super) fn new(max_depth: usize) -> Self {
        Self {
            max_depth,
            ..Self::default()
        }
    }

    /// Appends one reference token to the path.
    fn enter(&self, token: &str) {
        let mut path = self.path.borrow_mut();
        self.segments.borrow_mut().push(path.len());
        path.push('/');
        path.push_str(token);
    }
}

impl Notes for Placed {
    fn open(&self) -> Result<(), String> {
        let depth = self.depth.get() + 1;
        self.depth.set(depth);
        if depth > self.max_depth {
            return Err(format!(
                "the document nests deeper than {} levels",
                self.max_depth
            ));
        }
        Ok(())
    }
    fn close(&self) {
        self.depth.set(self.depth.get().saturating_sub(1));
    }
    fn member(&self, key: &str) {
        self.enter(&key.replace('~', "~0").replace('/', "~1"));
    }
    fn item(&self, index: usize) {
        self.enter(&index.to_string());
    }
    fn left(&self) {
        if let Some(start) = self.segments.borrow_mut().pop() {
            self.path.borrow_mut().truncate(start);
        }
    }
    fn number(&self, _float: Option<f64>) {
        let at = self.path.borrow().clone();
        self.numbers.borrow_mut().push(at);
    }
}
