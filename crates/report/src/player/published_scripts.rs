//! PLAYER*'s published per-script rows: Table A3 (the 12 Chinese scripts), Table A4 (the 4 English
//! scripts the paper also evaluated) and Table A5 (the cost of each of the 12), typed in from the
//! paper as printed, so Tables A3, A4 and A5 show the paper's rows under each script a sweep played
//! that the paper played too. The imported WellPlay scripts carry the paper's names (`sleuth import
//! wellplay`), so a script is matched by its title ([`matches`]), never by a file or a row of the
//! dataset.

use super::published::METHODS;
use crate::table::{Cell, Column, Row, Table};

/// One script's block of Table A3 or A4.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScriptRows {
    /// The paper's name of the script, without the players and victims it prints beside it.
    pub name: &'static str,
    pub players: usize,
    pub victims: usize,
    /// Questions per category: Objective, Reasoning, Relations.
    pub questions: [usize; 3],
    /// Voting per method ([`METHODS`] order), (mean, std) over games; Table A4 prints none.
    pub voting: Option<[(f64, f64); 6]>,
    /// Objective, Reasoning, Relations and Overall per method ([`METHODS`] order), (mean, std) over
    /// the three evaluation runs.
    pub scores: [[(f64, f64); 6]; 4],
}

/// Table A3 per script (the 12 Chinese scripts, gpt-35-turbo-16k), in its order. (Solitary Boat
/// Firefly's PP Reasoning .318 is a score, not 1/π.)
#[rustfmt::skip]
#[allow(clippy::approx_constant)]
pub const A3_SCRIPTS: [ScriptRows; 12] = [
    ScriptRows {
        name: "Death Wears White",
        players: 9,
        victims: 1,
        questions: [10, 102, 72],
        voting: Some([(0.000, 0.000), (0.333, 0.471), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000)]),
        scores: [
            [(0.233, 0.058), (0.467, 0.116), (0.333, 0.058), (0.267, 0.058), (0.267, 0.058), (0.267, 0.116)],
            [(0.454, 0.012), (0.503, 0.015), (0.350, 0.021), (0.395, 0.031), (0.392, 0.010), (0.408, 0.030)],
            [(0.431, 0.036), (0.425, 0.031), (0.454, 0.035), (0.472, 0.037), (0.398, 0.032), (0.500, 0.048)],
            [(0.420, 0.007), (0.480, 0.011), (0.367, 0.015), (0.393, 0.009), (0.377, 0.013), (0.407, 0.007)],
        ],
    },
    ScriptRows {
        name: "Ghost Revenge",
        players: 7,
        victims: 3,
        questions: [19, 152, 69],
        voting: Some([(0.222, 0.416), (0.333, 0.471), (0.222, 0.416), (0.111, 0.314), (0.333, 0.471), (0.333, 0.471)]),
        scores: [
            [(0.333, 0.030), (0.334, 0.132), (0.368, 0.052), (0.316, 0.190), (0.404, 0.080), (0.509, 0.133)],
            [(0.390, 0.020), (0.533, 0.030), (0.417, 0.023), (0.410, 0.019), (0.450, 0.056), (0.399, 0.040)],
            [(0.246, 0.014), (0.411, 0.103), (0.348, 0.014), (0.309, 0.047), (0.420, 0.038), (0.386, 0.030)],
            [(0.362, 0.016), (0.483, 0.020), (0.399, 0.009), (0.381, 0.049), (0.438, 0.030), (0.417, 0.032)],
        ],
    },
    ScriptRows {
        name: "Danshui Villa",
        players: 7,
        victims: 2,
        questions: [12, 128, 63],
        voting: Some([(0.167, 0.373), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000)]),
        scores: [
            [(0.389, 0.048), (0.222, 0.127), (0.167, 0.000), (0.305, 0.048), (0.306, 0.096), (0.361, 0.127)],
            [(0.315, 0.020), (0.422, 0.016), (0.307, 0.044), (0.352, 0.008), (0.347, 0.005), (0.367, 0.008)],
            [(0.323, 0.040), (0.476, 0.028), (0.344, 0.051), (0.381, 0.069), (0.333, 0.016), (0.370, 0.056)],
            [(0.326, 0.014), (0.403, 0.028), (0.293, 0.040), (0.349, 0.012), (0.339, 0.013), (0.367, 0.011)],
        ],
    },
    ScriptRows {
        name: "Unfinished Love",
        players: 7,
        victims: 2,
        questions: [12, 61, 72],
        voting: Some([(0.000, 0.000), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000)]),
        scores: [
            [(0.167, 0.000), (0.167, 0.083), (0.167, 0.144), (0.278, 0.048), (0.111, 0.127), (0.222, 0.127)],
            [(0.552, 0.025), (0.563, 0.025), (0.563, 0.010), (0.486, 0.025), (0.552, 0.019), (0.601, 0.019)],
            [(0.500, 0.028), (0.546, 0.021), (0.523, 0.071), (0.583, 0.028), (0.556, 0.042), (0.616, 0.016)],
            [(0.457, 0.017), (0.475, 0.033), (0.469, 0.018), (0.467, 0.004), (0.460, 0.030), (0.525, 0.029)],
        ],
    },
    ScriptRows {
        name: "Cruise Incident",
        players: 5,
        victims: 1,
        questions: [4, 24, 30],
        voting: Some([(0.000, 0.000), (0.000, 0.000), (0.667, 0.471), (0.000, 0.000), (0.333, 0.471), (0.333, 0.471)]),
        scores: [
            [(0.167, 0.289), (0.250, 0.250), (0.500, 0.250), (0.500, 0.000), (0.583, 0.382), (0.667, 0.144)],
            [(0.653, 0.064), (0.472, 0.064), (0.542, 0.042), (0.528, 0.024), (0.528, 0.105), (0.514, 0.024)],
            [(0.267, 0.058), (0.411, 0.102), (0.456, 0.020), (0.456, 0.051), (0.422, 0.039), (0.434, 0.058)],
            [(0.459, 0.012), (0.415, 0.079), (0.510, 0.037), (0.503, 0.017), (0.509, 0.107), (0.520, 0.025)],
        ],
    },
    ScriptRows {
        name: "Sin",
        players: 4,
        victims: 1,
        questions: [3, 20, 21],
        voting: Some([(0.000, 0.000), (0.333, 0.471), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000), (0.333, 0.471)]),
        scores: [
            [(0.000, 0.000), (0.333, 0.334), (0.111, 0.192), (0.111, 0.192), (0.111, 0.192), (0.333, 0.334)],
            [(0.483, 0.058), (0.567, 0.029), (0.767, 0.058), (0.600, 0.100), (0.717, 0.058), (0.600, 0.000)],
            [(0.476, 0.082), (0.587, 0.099), (0.429, 0.000), (0.699, 0.055), (0.524, 0.048), (0.698, 0.027)],
            [(0.397, 0.029), (0.531, 0.053), (0.570, 0.000), (0.539, 0.029), (0.564, 0.012), (0.577, 0.053)],
        ],
    },
    ScriptRows {
        name: "Deadly Fountain",
        players: 4,
        victims: 1,
        questions: [3, 21, 12],
        voting: Some([(0.000, 0.000), (0.667, 0.471), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000)]),
        scores: [
            [(0.000, 0.000), (0.556, 0.193), (0.000, 0.000), (0.111, 0.192), (0.000, 0.000), (0.111, 0.192)],
            [(0.413, 0.153), (0.667, 0.126), (0.460, 0.027), (0.476, 0.082), (0.539, 0.055), (0.587, 0.028)],
            [(0.305, 0.048), (0.389, 0.048), (0.333, 0.084), (0.222, 0.096), (0.222, 0.048), (0.361, 0.127)],
            [(0.319, 0.097), (0.604, 0.104), (0.354, 0.022), (0.369, 0.053), (0.390, 0.043), (0.463, 0.041)],
        ],
    },
    ScriptRows {
        name: "Unbelievable Incident",
        players: 5,
        victims: 1,
        questions: [4, 24, 15],
        voting: Some([(0.000, 0.000), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000), (0.000, 0.000)]),
        scores: [
            [(0.083, 0.144), (0.083, 0.144), (0.333, 0.144), (0.167, 0.144), (0.083, 0.144), (0.250, 0.000)],
            [(0.389, 0.105), (0.528, 0.064), (0.431, 0.064), (0.361, 0.064), (0.264, 0.127), (0.583, 0.042)],
            [(0.422, 0.102), (0.822, 0.102), (0.644, 0.077), (0.756, 0.102), (0.289, 0.154), (0.556, 0.077)],
            [(0.330, 0.081), (0.481, 0.020), (0.444, 0.037), (0.382, 0.035), (0.230, 0.034), (0.509, 0.038)],
        ],
    },
    ScriptRows {
        name: "Desperate Sunshine",
        players: 4,
        victims: 1,
        questions: [3, 18, 36],
        voting: Some([(0.000, 0.000), (0.667, 0.471), (0.667, 0.471), (0.000, 0.000), (0.667, 0.471), (1.000, 0.000)]),
        scores: [
            [(0.333, 0.000), (0.556, 0.193), (0.556, 0.193), (0.333, 0.000), (0.667, 0.334), (0.778, 0.192)],
            [(0.556, 0.056), (0.778, 0.096), (0.648, 0.032), (0.704, 0.032), (0.759, 0.064), (0.741, 0.085)],
            [(0.537, 0.064), (0.611, 0.048), (0.556, 0.028), (0.630, 0.043), (0.500, 0.056), (0.565, 0.070)],
            [(0.514, 0.013), (0.680, 0.047), (0.599, 0.023), (0.618, 0.020), (0.647, 0.075), (0.680, 0.047)],
        ],
    },
    ScriptRows {
        name: "Riverside Inn",
        players: 4,
        victims: 1,
        questions: [3, 18, 18],
        voting: Some([(0.333, 0.471), (1.000, 0.000), (0.333, 0.471), (0.000, 0.000), (1.000, 0.000), (0.333, 0.471)]),
        scores: [
            [(0.444, 0.193), (0.889, 0.192), (0.444, 0.193), (0.000, 0.000), (0.667, 0.000), (0.556, 0.193)],
            [(0.519, 0.032), (0.667, 0.056), (0.463, 0.064), (0.500, 0.056), (0.685, 0.032), (0.667, 0.056)],
            [(0.407, 0.085), (0.500, 0.096), (0.463, 0.085), (0.426, 0.064), (0.389, 0.000), (0.426, 0.032)],
            [(0.479, 0.032), (0.671, 0.036), (0.459, 0.073), (0.387, 0.020), (0.614, 0.018), (0.590, 0.023)],
        ],
    },
    ScriptRows {
        name: "Solitary Boat Firefly",
        players: 6,
        victims: 4,
        questions: [20, 109, 69],
        voting: Some([(0.167, 0.373), (0.583, 0.493), (0.000, 0.000), (0.250, 0.433), (0.167, 0.373), (0.500, 0.500)]),
        scores: [
            [(0.267, 0.104), (0.500, 0.050), (0.183, 0.058), (0.350, 0.132), (0.217, 0.076), (0.517, 0.104)],
            [(0.318, 0.014), (0.569, 0.018), (0.370, 0.014), (0.425, 0.046), (0.401, 0.014), (0.379, 0.005)],
            [(0.483, 0.017), (0.507, 0.014), (0.536, 0.014), (0.565, 0.038), (0.503, 0.044), (0.594, 0.087)],
            [(0.332, 0.015), (0.544, 0.024), (0.354, 0.023), (0.430, 0.016), (0.375, 0.015), (0.444, 0.030)],
        ],
    },
    ScriptRows {
        name: "Manna",
        players: 6,
        victims: 3,
        questions: [24, 123, 88],
        voting: Some([(0.000, 0.000), (0.000, 0.000), (0.222, 0.416), (0.333, 0.471), (0.444, 0.497), (0.556, 0.497)]),
        scores: [
            [(0.250, 0.042), (0.389, 0.086), (0.403, 0.064), (0.444, 0.064), (0.430, 0.087), (0.569, 0.105)],
            [(0.458, 0.005), (0.393, 0.040), (0.569, 0.028), (0.499, 0.033), (0.526, 0.017), (0.539, 0.021)],
            [(0.447, 0.058), (0.640, 0.036), (0.538, 0.043), (0.614, 0.030), (0.511, 0.034), (0.580, 0.046)],
            [(0.408, 0.017), (0.434, 0.002), (0.525, 0.017), (0.505, 0.004), (0.501, 0.025), (0.553, 0.045)],
        ],
    },
];

/// Table A4 per script (the 4 English scripts the paper evaluated), in its order. No Voting row.
#[rustfmt::skip]
pub const A4_SCRIPTS: [ScriptRows; 4] = [
    ScriptRows {
        name: "Death Wears White",
        players: 9,
        victims: 1,
        questions: [10, 102, 72],
        voting: None,
        scores: [
            [(0.200, 0.173), (0.900, 0.100), (0.300, 0.100), (0.267, 0.058), (0.300, 0.000), (0.267, 0.058)],
            [(0.350, 0.044), (0.520, 0.026), (0.356, 0.037), (0.363, 0.049), (0.399, 0.006), (0.441, 0.030)],
            [(0.547, 0.008), (0.445, 0.026), (0.495, 0.016), (0.495, 0.057), (0.398, 0.032), (0.491, 0.021)],
            [(0.367, 0.040), (0.549, 0.012), (0.375, 0.033), (0.375, 0.026), (0.385, 0.010), (0.427, 0.029)],
        ],
    },
    ScriptRows {
        name: "Ghost Revenge",
        players: 7,
        victims: 3,
        questions: [19, 152, 69],
        voting: None,
        scores: [
            [(0.403, 0.061), (0.561, 0.132), (0.439, 0.109), (0.211, 0.106), (0.211, 0.106), (0.526, 0.106)],
            [(0.456, 0.004), (0.507, 0.007), (0.439, 0.031), (0.539, 0.023), (0.441, 0.017), (0.423, 0.031)],
            [(0.309, 0.009), (0.261, 0.025), (0.328, 0.059), (0.304, 0.015), (0.280, 0.017), (0.353, 0.059)],
            [(0.428, 0.010), (0.485, 0.024), (0.425, 0.002), (0.452, 0.023), (0.380, 0.010), (0.432, 0.013)],
        ],
    },
    ScriptRows {
        name: "Danshui Villa",
        players: 7,
        victims: 2,
        questions: [12, 128, 63],
        voting: None,
        scores: [
            [(0.167, 0.083), (0.278, 0.048), (0.472, 0.048), (0.333, 0.000), (0.305, 0.048), (0.389, 0.096)],
            [(0.325, 0.031), (0.427, 0.009), (0.401, 0.020), (0.373, 0.020), (0.344, 0.014), (0.357, 0.033)],
            [(0.328, 0.056), (0.460, 0.028), (0.391, 0.066), (0.312, 0.106), (0.376, 0.046), (0.407, 0.075)],
            [(0.292, 0.012), (0.412, 0.017), (0.409, 0.009), (0.359, 0.010), (0.343, 0.010), (0.369, 0.033)],
        ],
    },
    ScriptRows {
        name: "Unfinished Love",
        players: 7,
        victims: 2,
        questions: [12, 61, 72],
        voting: None,
        scores: [
            [(0.167, 0.000), (0.195, 0.048), (0.389, 0.048), (0.417, 0.000), (0.361, 0.048), (0.528, 0.127)],
            [(0.536, 0.018), (0.557, 0.028), (0.650, 0.038), (0.612, 0.009), (0.634, 0.038), (0.656, 0.000)],
            [(0.491, 0.016), (0.551, 0.016), (0.509, 0.032), (0.481, 0.021), (0.592, 0.008), (0.500, 0.037)],
            [(0.446, 0.006), (0.479, 0.029), (0.560, 0.011), (0.538, 0.010), (0.566, 0.009), (0.589, 0.018)],
        ],
    },
];

/// One script's block of Table A5: its length and the USD of one complete gameplay and of one
/// evaluation process per method ([`METHODS`] order; no gameplay for PP and OP, which play none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScriptCosts {
    /// The paper's name of the script.
    pub name: &'static str,
    /// #Tokens: the mean length of one character's script.
    pub tokens: f64,
    pub gameplay: [Option<f64>; 6],
    pub evaluation: [f64; 6],
}

/// Table A5 per script (the 12 Chinese scripts, gpt-35-turbo-16k), in its order. Its Overall rows
/// ([`super::published::A5_OVERALL`]) are these summed, to the printed rounding.
#[rustfmt::skip]
pub const A5_SCRIPTS: [ScriptCosts; 12] = [
    ScriptCosts { name: "Death Wears White", tokens: 3190.0,
        gameplay: [None, None, Some(3.797), Some(4.643), Some(3.992), Some(3.363)],
        evaluation: [0.349, 1.433, 0.815, 0.807, 0.790, 0.799] },
    ScriptCosts { name: "Ghost Revenge", tokens: 5487.0,
        gameplay: [None, None, Some(6.702), Some(8.231), Some(7.056), Some(5.947)],
        evaluation: [0.418, 1.945, 1.006, 1.004, 0.995, 1.012] },
    ScriptCosts { name: "Danshui Villa", tokens: 5111.0,
        gameplay: [None, None, Some(5.215), Some(6.262), Some(5.449), Some(4.603)],
        evaluation: [0.351, 1.415, 0.834, 0.816, 0.833, 0.825] },
    ScriptCosts { name: "Unfinished Love", tokens: 2501.0,
        gameplay: [None, None, Some(3.945), Some(4.754), Some(4.237), Some(3.505)],
        evaluation: [0.230, 0.872, 0.487, 0.502, 0.499, 0.494] },
    ScriptCosts { name: "Cruise Incident", tokens: 1262.0,
        gameplay: [None, None, Some(0.975), Some(1.146), Some(1.021), Some(0.846)],
        evaluation: [0.064, 0.327, 0.162, 0.165, 0.164, 0.163] },
    ScriptCosts { name: "Sin", tokens: 2121.0,
        gameplay: [None, None, Some(0.680), Some(0.833), Some(0.730), Some(0.603)],
        evaluation: [0.061, 0.287, 0.141, 0.140, 0.141, 0.142] },
    ScriptCosts { name: "Deadly Fountain", tokens: 1852.0,
        gameplay: [None, None, Some(0.671), Some(0.810), Some(0.724), Some(0.596)],
        evaluation: [0.045, 0.207, 0.107, 0.111, 0.111, 0.109] },
    ScriptCosts { name: "Unbelievable Incident", tokens: 3182.0,
        gameplay: [None, None, Some(1.304), Some(1.567), Some(1.367), Some(1.150)],
        evaluation: [0.077, 0.291, 0.159, 0.163, 0.161, 0.162] },
    ScriptCosts { name: "Desperate Sunshine", tokens: 3370.0,
        gameplay: [None, None, Some(0.803), Some(0.972), Some(0.847), Some(0.701)],
        evaluation: [0.104, 0.383, 0.222, 0.221, 0.224, 0.220] },
    ScriptCosts { name: "Riverside Inn", tokens: 1909.0,
        gameplay: [None, None, Some(0.633), Some(0.762), Some(0.682), Some(0.561)],
        evaluation: [0.055, 0.223, 0.120, 0.124, 0.121, 0.123] },
    ScriptCosts { name: "Solitary Boat Firefly", tokens: 8893.0,
        gameplay: [None, None, Some(7.799), Some(9.257), Some(8.252), Some(6.800)],
        evaluation: [0.380, 1.571, 0.816, 0.811, 0.814, 0.823] },
    ScriptCosts { name: "Manna", tokens: 9028.0,
        gameplay: [None, None, Some(5.805), Some(6.925), Some(6.108), Some(5.028)],
        evaluation: [0.444, 1.864, 0.944, 0.965, 0.937, 0.953] },
];

/// Whether a script titled `title` is the paper's `name`: the same words (case and punctuation aside),
/// or the title ends with them as whole words — the paper shortens some titles ("Cruise Incident" for
/// "Oriental Star Cruise Incident").
pub fn matches(title: &str, name: &str) -> bool {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let (t, n) = (words(title), words(name));
    !n.is_empty() && t.ends_with(&n)
}

/// Inserts Table A3's published rows ("Published A3: METHOD", the Chinese original) under every
/// script `a3` shows that the paper played, for the methods played (all six when none matched).
/// Their #QA is the paper's; Games is empty.
pub fn insert_a3(a3: &mut Table) {
    if insert_choice_rows(a3, "Published A3", &A3_SCRIPTS) > 0 {
        a3.note.push_str(
            " Rows \"Published A3: METHOD\" under a script: the paper's Table A3 for the script of \
             that name (its Chinese original, gpt-35-turbo-16k, 3 evaluation runs; printed as the \
             paper prints them, so their category spreads are its n − 1 form). #QA is the paper's \
             count.",
        );
    }
}

/// Inserts Table A4's published rows ("Published A4 (English): METHOD") under every script `a4` (the
/// English-script games) shows that the paper also evaluated in English, as [`insert_a3`] does.
pub fn insert_a4(a4: &mut Table) {
    if insert_choice_rows(a4, "Published A4 (English)", &A4_SCRIPTS) > 0 {
        a4.note.push_str(
            " Rows \"Published A4 (English): METHOD\" under a script: the paper's Table A4 for the \
             English version of the script of that name (gpt-35-turbo-16k, 3 evaluation runs, n − 1 \
             spreads as printed; the paper prints no Voting there). #QA is the paper's count.",
        );
    }
}

/// Inserts Table A5's published rows ("Published A5: METHOD") under every script `a5` shows that the
/// paper played: the paper's #Tokens, gameplay USD and USD of one evaluation process, for the
/// methods played (all six when none matched); the paper prints no tokens or calls, so those cells
/// are empty.
pub fn insert_a5(a5: &mut Table) {
    let Some(method_col) = a5.column("Method") else {
        return;
    };
    let shown = shown_methods(a5, method_col);
    let columns = a5.columns.clone();
    let inserted = insert_under_scripts(a5, |script| {
        let Some(paper) = A5_SCRIPTS.iter().find(|s| matches(script, s.name)) else {
            return Vec::new();
        };
        shown
            .iter()
            .map(|&m| {
                row(&columns, |heading| match heading {
                    "Script" => Cell::Text(script.into()),
                    "#Tokens" => Cell::Number(Some(paper.tokens)),
                    "Method" => Cell::Text(format!("Published A5: {}", METHODS[m])),
                    "Gameplay USD" => Cell::Number(paper.gameplay[m]),
                    "Evaluation USD" => Cell::Number(Some(paper.evaluation[m])),
                    _ => Cell::Number(None),
                })
            })
            .collect()
    });
    if inserted > 0 {
        a5.note.push_str(
            " Rows \"Published A5: METHOD\" under a script: the paper's Table A5 for the script of \
             that name (its Chinese original, gpt-35-turbo-16k): its #Tokens, the USD of one \
             gameplay and of one evaluation process (no tokens or calls printed; PP and OP play no \
             game).",
        );
    }
}

/// Inserts the rows of `paper`'s block for each script of `t` (a table of Table A3's columns) that
/// the paper played, labelled "`label`: METHOD"; returns how many rows were inserted.
fn insert_choice_rows(t: &mut Table, label: &str, paper: &[ScriptRows]) -> usize {
    let Some(method_col) = t.column("Method") else {
        return 0;
    };
    let shown = shown_methods(t, method_col);
    let columns = t.columns.clone();
    insert_under_scripts(t, |script| {
        let Some(paper) = paper.iter().find(|s| matches(script, s.name)) else {
            return Vec::new();
        };
        shown
            .iter()
            .map(|&m| {
                row(&columns, |heading| match heading {
                    "Script" => Cell::Text(script.into()),
                    "Method" => Cell::Text(format!("{label}: {}", METHODS[m])),
                    "#QA" => Cell::Number(Some(paper.questions.iter().sum::<usize>() as f64)),
                    "Voting" => Cell::MeanStd(paper.voting.map(|v| v[m])),
                    "Objective" => Cell::MeanStd(Some(paper.scores[0][m])),
                    "Reasoning" => Cell::MeanStd(Some(paper.scores[1][m])),
                    "Relations" => Cell::MeanStd(Some(paper.scores[2][m])),
                    "Overall" => Cell::MeanStd(Some(paper.scores[3][m])),
                    _ => Cell::Number(None),
                })
            })
            .collect()
    })
}

/// The indices into [`METHODS`] of the paper's methods whose rows `t` shows: those its rows played
/// (matched by the framework's name at the start of the Method cell), or all six when none matched.
fn shown_methods(t: &Table, method_col: usize) -> Vec<usize> {
    let played: Vec<&str> = t
        .rows
        .iter()
        .filter_map(|r| match r.cells.get(method_col) {
            Some(Cell::Text(m)) => m.split(' ').next(),
            _ => None,
        })
        .collect();
    let matched: Vec<usize> = (0..METHODS.len())
        .filter(|&m| played.contains(&METHODS[m]))
        .collect();
    if matched.is_empty() {
        (0..METHODS.len()).collect()
    } else {
        matched
    }
}

/// A row of `columns`, each cell given by its heading.
fn row(columns: &[Column], cell: impl Fn(&str) -> Cell) -> Row {
    Row {
        cells: columns.iter().map(|c| cell(&c.heading)).collect(),
        total: false,
    }
}

/// Inserts `rows_for(script)` after the last row of each script `t` shows (rows of one script are
/// consecutive; total rows are nobody's); returns how many rows were inserted.
fn insert_under_scripts(t: &mut Table, mut rows_for: impl FnMut(&str) -> Vec<Row>) -> usize {
    let Some(script_col) = t.column("Script") else {
        return 0;
    };
    let text = |r: &Row| match r.cells.get(script_col) {
        Some(Cell::Text(s)) => s.clone(),
        _ => String::new(),
    };
    let (mut i, mut inserted) = (0, 0);
    while i < t.rows.len() {
        let row = &t.rows[i];
        let script = text(row);
        let last_of_script = !row.total
            && t.rows
                .get(i + 1)
                .is_none_or(|next| next.total || text(next) != script);
        if !last_of_script {
            i += 1;
            continue;
        }
        let rows = rows_for(&script);
        let n = rows.len();
        inserted += n;
        t.rows.splice(i + 1..i + 1, rows);
        i += n + 1;
    }
    inserted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_matches_the_papers_name_by_its_words_or_their_ending() {
        assert!(matches("Ghost Revenge", "Ghost Revenge"));
        assert!(matches("ghost  revenge!", "Ghost Revenge"));
        assert!(matches("Oriental Star Cruise Incident", "Cruise Incident"));
        assert!(!matches("Cruise Incident at Dawn", "Cruise Incident"));
        assert!(!matches("Cousin", "Sin"), "whole words only");
        assert!(!matches("Revenge", "Ghost Revenge"));
    }

    #[test]
    fn every_script_block_holds_its_questions_and_six_methods() {
        for s in A3_SCRIPTS.iter().chain(&A4_SCRIPTS) {
            assert!(s.questions.iter().all(|&q| q > 0), "{}", s.name);
            for category in s.scores {
                assert!(
                    category
                        .iter()
                        .all(|&(m, sd)| (0.0..=1.0).contains(&m) && sd >= 0.0),
                    "{}",
                    s.name
                );
            }
        }
        assert!(A3_SCRIPTS.iter().all(|s| s.voting.is_some()));
        assert!(A4_SCRIPTS.iter().all(|s| s.voting.is_none()));
    }
}
