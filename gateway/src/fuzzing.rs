//! Entry points for the fuzz targets (`fuzz/`, feature `fuzzing`): each
//! adapter's request decoding and stream-event assembly over arbitrary
//! bytes. Not an API: the properties they check are in the fuzz crate.
