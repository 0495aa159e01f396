//! Benchmark: discovery of 200 skills (cold: every file parsed; warm: the mtime cache hits)
//! and catalogue selection over them within a budget that forces ranking. Targets: discovery
//! under 10 ms, selection under 1 ms. Prints the median of several runs. Run with
//! `cargo bench -p codecoder-skills`.
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use codecoder_skills::{Catalogue, Roots, Skill, SkillStore};

const N_SKILLS: usize = 200;
const N_RUNS: usize = 21;

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn main() {
    let root = tempfile::tempdir().unwrap();
    let skills_dir = root.path().join(".codecoder/skills");
    for i in 0..N_SKILLS {
        let dir = skills_dir.join(format!("skill-{i:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!(
                "---\nname: skill-{i:03}\ndescription: Does task number {i} with tool {} and format {}\nwhen_to_use: when the person mentions topic-{i}\nallowed-tools: Read Grep\nmetadata:\n  author: bench\n---\n# Skill {i}\n\n{}",
                i % 17,
                i % 5,
                "Step by step instructions.\n".repeat(40)
            ),
        )
        .unwrap();
    }
    let roots = Roots::standard(root.path(), None, None);
    let cold: Vec<Duration> = (0..N_RUNS)
        .map(|_| {
            let store = SkillStore::new(roots.clone());
            let start = Instant::now();
            let (skills, _) = store.scan();
            let elapsed = start.elapsed();
            assert_eq!(skills.len(), N_SKILLS);
            elapsed
        })
        .collect();
    let store = SkillStore::new(roots);
    let _ = store.scan();
    let warm: Vec<Duration> = (0..N_RUNS)
        .map(|_| {
            let start = Instant::now();
            let (skills, _) = store.scan();
            let elapsed = start.elapsed();
            assert_eq!(skills.len(), N_SKILLS);
            elapsed
        })
        .collect();
    let (skills, _) = store.scan();
    let refs: Vec<&Skill> = skills.values().collect();
    let selection: Vec<Duration> = (0..N_RUNS)
        .map(|_| {
            let start = Instant::now();
            let catalogue = Catalogue::select(&refs, "please handle topic-42 with tool 3", 8_000);
            let elapsed = start.elapsed();
            assert!(catalogue.left_out > 0 && catalogue.listed.contains(&"skill-042".to_owned()));
            elapsed
        })
        .collect();
    println!("discovery of {N_SKILLS} skills, cold: median {:?}", median(cold));
    println!("discovery of {N_SKILLS} skills, warm (mtime cache): median {:?}", median(warm));
    println!(
        "catalogue selection over {N_SKILLS} skills (ranked, 8 KB budget): median {:?}",
        median(selection)
    );
}
