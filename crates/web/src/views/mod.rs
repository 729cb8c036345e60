//! The page's components, one file per part of the page. They read the state's signals
//! (`crate::state`), place the texts built in `crate::text`, and call the state's
//! actions; they compute nothing themselves and write no storage.

pub mod classes;
pub mod columns;
pub mod intro;
pub mod ledger;
pub mod llm;
pub mod model;
pub mod privacy;
pub mod progress;
pub mod recipient;
pub mod recipient_results;
pub mod replay;
pub mod results;
pub mod settings_fields;
pub mod summary;
pub mod upload;
pub mod utility;
pub mod vote;

/// The files of a file input or a drop.
fn files_of(list: Option<web_sys::FileList>) -> Vec<web_sys::File> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.get(i)).collect()
}
