//! Undo against a worktree that changes under it, through the library the front-ends share
//! (`plan_revert` then `apply_revert`), on real files with the real `git`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use toolshed_agent::store::{StepKind, Store};
use toolshed_agent::undo::{Planned, RevertPlan, Undo, UndoError, apply_revert, plan_revert};

/// A session with one step that wrote `a.txt` and `b.txt`, and the revert worked out for it.
async fn session_and_plan(root: &Path, data: &Path) -> (Store, Undo, RevertPlan) {
    std::fs::write(root.join("a.txt"), "a v1\n").unwrap();
    std::fs::write(root.join("b.txt"), "b v1\n").unwrap();
    let store = Store::open(data.join("sessions.db")).unwrap();
    let undo = Undo::new(data, root, 7);
    let session = store.create_session(None, "build", None, root).unwrap();
    let step = store.begin_step(&session.id, StepKind::Model).unwrap();
    let before = undo.snapshot().await.unwrap();
    std::fs::write(root.join("a.txt"), "a by the session\n").unwrap();
    std::fs::write(root.join("b.txt"), "b by the session\n").unwrap();
    undo.record(&store, &session.id, step, &before).await.unwrap();
    let Planned::Revert(plan) = plan_revert(&store, &undo, &session.id, None).await.unwrap() else {
        panic!("nothing to revert")
    };
    assert_eq!(plan.files, vec![PathBuf::from("a.txt"), PathBuf::from("b.txt")]);
    assert!(plan.hand_edited.is_empty());
    (store, undo, plan)
}

/// Review 22: a file changed while the person was asked about the revert (after it was worked
/// out) was overwritten without being named, and the revert's record held the stale state, so
/// reverting again could not bring the edit back. Nothing is done now, forced or not.
#[tokio::test]
async fn a_file_changed_while_the_revert_waits_is_not_overwritten() {
    for force in [false, true] {
        let data = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (store, undo, plan) = session_and_plan(root, data.path()).await;
        std::fs::write(root.join("b.txt"), "b by the session\nEDITED WHILE ASKED\n").unwrap();
        let session = plan.session_id.clone();
        let err = apply_revert(&store, &undo, plan, force).await.unwrap_err();
        assert!(matches!(&err, UndoError::ChangedMeanwhile(files) if files == &[PathBuf::from("b.txt")]), "{err}");
        assert!(err.to_string().contains("nothing was changed"), "{err}");
        assert_eq!(std::fs::read_to_string(root.join("b.txt")).unwrap(), "b by the session\nEDITED WHILE ASKED\n");
        assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a by the session\n", "nothing changed");
        assert_eq!(store.steps(&session).unwrap().len(), 1, "nothing recorded");
    }
}

/// A change meanwhile to a file the revert does not cover is no reason to stop, and the
/// revert's record starts from the worktree as it found it then.
#[tokio::test]
async fn a_change_meanwhile_elsewhere_does_not_stop_the_revert() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (store, undo, plan) = session_and_plan(root, data.path()).await;
    std::fs::write(root.join("other.txt"), "made meanwhile\n").unwrap();
    let session = plan.session_id.clone();
    let outcome = apply_revert(&store, &undo, plan, false).await.unwrap();
    assert_eq!(outcome.restored, vec![PathBuf::from("a.txt"), PathBuf::from("b.txt")]);
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a v1\n");
    assert_eq!(std::fs::read_to_string(root.join("other.txt")).unwrap(), "made meanwhile\n");
    // Reverting the revert puts the session's files back and leaves the other one alone.
    let Planned::Revert(again) = plan_revert(&store, &undo, &session, None).await.unwrap() else { panic!() };
    assert_eq!(again.files, vec![PathBuf::from("a.txt"), PathBuf::from("b.txt")]);
    apply_revert(&store, &undo, again, false).await.unwrap();
    assert_eq!(std::fs::read_to_string(root.join("b.txt")).unwrap(), "b by the session\n");
    assert_eq!(std::fs::read_to_string(root.join("other.txt")).unwrap(), "made meanwhile\n");
}

/// Review 27: an ignored file put, while the person was asked, in a directory the revert
/// removes was deleted (snapshots never hold it, so it did not show as a change meanwhile).
#[tokio::test]
async fn an_ignored_file_made_while_the_revert_waits_is_never_removed() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(root.join("p"), "a file\n").unwrap();
    let store = Store::open(data.path().join("sessions.db")).unwrap();
    let undo = Undo::new(data.path(), root, 7);
    let session = store.create_session(None, "build", None, root).unwrap();
    let step = store.begin_step(&session.id, StepKind::Model).unwrap();
    let before = undo.snapshot().await.unwrap();
    std::fs::remove_file(root.join("p")).unwrap();
    std::fs::create_dir(root.join("p")).unwrap();
    std::fs::write(root.join("p/m"), "the session's\n").unwrap();
    undo.record(&store, &session.id, step, &before).await.unwrap();
    let Planned::Revert(plan) = plan_revert(&store, &undo, &session.id, None).await.unwrap() else { panic!() };
    std::fs::write(root.join("p/secret.log"), "SECRET\n").unwrap();
    let err = apply_revert(&store, &undo, plan, true).await.unwrap_err();
    assert!(matches!(&err, UndoError::WouldLose(files) if files == &[PathBuf::from("p/secret.log")]), "{err}");
    assert_eq!(std::fs::read_to_string(root.join("p/secret.log")).unwrap(), "SECRET\n");
}

/// Review 29: a file put, while the person was asked, where a directory of the revert comes
/// back was removed (it is on the way to the revert's files, not under them).
#[tokio::test]
async fn a_file_made_where_a_directory_comes_back_while_the_revert_waits_stops_it() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("d")).unwrap();
    std::fs::write(root.join("d/x"), "x\n").unwrap();
    let store = Store::open(data.path().join("sessions.db")).unwrap();
    let undo = Undo::new(data.path(), root, 7);
    let session = store.create_session(None, "build", None, root).unwrap();
    let step = store.begin_step(&session.id, StepKind::Model).unwrap();
    let before = undo.snapshot().await.unwrap();
    std::fs::remove_dir_all(root.join("d")).unwrap();
    undo.record(&store, &session.id, step, &before).await.unwrap();
    let Planned::Revert(plan) = plan_revert(&store, &undo, &session.id, None).await.unwrap() else { panic!() };
    std::fs::write(root.join("d"), "precious\n").unwrap();
    let err = apply_revert(&store, &undo, plan, true).await.unwrap_err();
    assert!(matches!(&err, UndoError::ChangedMeanwhile(files) if files == &[PathBuf::from("d")]), "{err}");
    assert_eq!(std::fs::read_to_string(root.join("d")).unwrap(), "precious\n");
}
